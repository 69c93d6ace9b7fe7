import AsyncHTTPClient
import Dispatch
import Logging
import PushTokens
import SwitchyardCore
import SwitchyardPluginHTTP
import SwitchyardPluginKit
import Synchronization

/// The exported entry point of `libpush.so`.
@_cdecl("switchyard_plugin_entry")
public func switchyardPluginEntry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(PushPlugin.self, offer: offer, table: table, capacity: capacity)
}

/// FCM-style push: a webhook that takes FCM HTTP v1 send requests (and plain JSON pushes and
/// token registrations) and emits `push.DataMessage` envelopes, and a sink that sends
/// envelopes with FCM HTTP v1.
final class PushPlugin: SwitchyardPlugin {
    static let messagesPort = "messages"
    static let sendPort = "send"

    /// Decoded by `validate` before anything starts (see ``SwitchyardPlugin/configuration``).
    static let configuration: (any PluginConfiguration.Type)? = PushConfiguration.self

    static let manifest = PluginManifest(
        name: "push",
        version: "0.1.0",
        summary: "FCM-style push: signed webhook in (FCM HTTP v1 shape), FCM HTTP v1 out",
        ports: [
            PortDeclaration(
                name: messagesPort,
                direction: .source,
                types: [PushEnvelopes.dataMessageType],
                requires: "listen",
                summary: "Messages the webhook accepted; the HTTP answer waits until the routes have taken them"
            ),
            PortDeclaration(
                name: sendPort,
                direction: .sink,
                types: ["*"],
                requires: "fcm",
                summary: "Sends each envelope with FCM HTTP v1; acknowledged on FCM's 200",
                preferences: PushSendPreferences.jsonSchema
            ),
        ],
        types: [PushEnvelopes.dataMessageType: PushEnvelopes.dataMessageSchema],
        config: PushConfiguration.jsonSchema,
        commands: commands
    )

    private let context: PluginContext
    private let name: String
    private let registry: PushTokenRegistry?
    private let webhook: WebhookServer?
    /// The configuration as given and the FCM sender made from it, replaced by a reconfigure
    /// (read by deliveries on route threads); senders a reconfigure replaced finish their
    /// sends and are stopped with the instance.
    private let current: Mutex<(config: JSONValue, sender: FCMSender?, senders: [FCMSender], clients: [HTTPClient])>

    /// The settings that shape the webhook's listening socket and the files opened at create:
    /// a change in any of them needs a new instance.
    static let restartKeys = [
        "listen", "tls", "max_connections", "max_connections_per_peer", "header_timeout", "body_timeout", "idle_timeout", "registry",
    ]

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        self.name = name
        let configuration = try PushConfiguration(config: config)
        if let path = configuration.registryPath {
            do {
                registry = try PushTokenRegistry(path: path)
            } catch {
                throw PluginError("registry: \(error)")
            }
        } else {
            registry = nil
        }
        let sender = try Self.makeSender(configuration.sender, name: name, registry: registry, context: context)
        current = Mutex((config, sender?.sender, sender.map { [$0.sender] } ?? [], sender.map { [$0.client] } ?? []))
        let registry = registry
        webhook = configuration.webhook.map { WebhookServer(settings: $0, instance: name, context: context, registry: registry) }
    }

    /// An FCM sender with its own HTTP client, when `settings` asks for one.
    private static func makeSender(
        _ settings: PushConfiguration.Sender?, name: String, registry: PushTokenRegistry?, context: PluginContext
    ) throws -> (sender: FCMSender, client: HTTPClient)? {
        guard let settings else { return nil }
        var logger = Logger(label: "push.\(name).fcm") { _ in PluginLogHandler(context: context) }
        logger.logLevel = .warning
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(), backgroundActivityLogger: logger)
        do {
            return (try FCMSender(settings: settings, client: client, registry: registry, context: context), client)
        } catch {
            try? client.syncShutdown()
            throw error
        }
    }

    private var sender: FCMSender? { current.withLock { $0.sender } }

    func start() throws {
        _ = try webhook?.start()
    }

    /// Adopts new authentication, projects, limits and FCM settings in place; the webhook keeps
    /// its socket. A change of ``restartKeys`` (or adding or removing the webhook) needs a new
    /// instance.
    func reconfigure(_ config: JSONValue) throws -> Bool {
        let old = current.withLock { $0.config }
        guard Self.restartKeys.allSatisfy({ config[$0] == old[$0] }) else { return false }
        let configuration = try PushConfiguration(config: config)
        let sender =
            config["fcm"] == old["fcm"] ? nil : try Self.makeSender(configuration.sender, name: name, registry: registry, context: context)
        if let settings = configuration.webhook { webhook?.adopt(settings) }
        current.withLock { current in
            current.config = config
            guard config["fcm"] != old["fcm"] else { return }
            current.sender = sender?.sender
            if let sender {
                current.senders.append(sender.sender)
                current.clients.append(sender.client)
            }
        }
        // A new sender starts empty: room the router, if the old one refused it, has not heard of.
        if sender != nil { context.sinkHasRoom() }
        return true
    }

    func quiesce() { webhook?.quiesce() }

    func stop() {
        let done = DispatchSemaphore(value: 0)
        let (senders, clients) = current.withLock { ($0.senders, $0.clients) }
        Task { [webhook] in
            await webhook?.stop()
            for sender in senders { await sender.stop() }
            for client in clients { try? await client.shutdown() }
            done.signal()
        }
        if done.wait(timeout: .now() + 15) == .timedOut {
            context.log(.warning, "stopping took longer than 15 s; left behind")
        }
    }

    func settled(token: UInt64, outcome: DeliveryOutcome) {
        webhook?.waiters.resolve(token, .settled(outcome))
    }

    func canAccept(on port: String) -> Bool { sender?.hasRoom ?? true }

    /// Refuses an iiidea action on `send` that names a user or device with no registered token
    /// (or no registry); asked again when a token registers (the instance reports ready then).
    func enablePiece(port: String, iiidea: String, preferences: JSONValue) throws {
        guard port == Self.sendPort, let preferences = try? PushSendPreferences(config: preferences) else { return }
        if let reason = preferences.refusal(registry: registry) { throw PluginError(reason) }
    }

    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery) {
        guard let sender else {
            delivery.ack(.reject, reason: "instance \(name) has no fcm: settings, so it cannot send")
            return
        }
        sender.send(envelope, delivery: delivery)
    }
}
