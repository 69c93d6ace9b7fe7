import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// Answers the router's offer for ``SIPPlugin``: what `libsip.so`'s exported entry point calls. That
/// entry point, `switchyard_plugin_entry`, is a target of its own (SIPPluginEntry, Plugins/sip/Entry):
/// every test target is linked into one test bundle, where this module sits beside the other
/// plugins' and a second definition of the C symbol would clash.
package func negotiateSIPPlugin(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(SIPPlugin.self, offer: offer, table: table, capacity: capacity)
}

/// SIP pager mode (RFC 3428) as a bridge endpoint: one registered identity per instance.
/// `messages` emits the MESSAGE requests it receives, `send` sends one per envelope and is
/// acknowledged on the far side's final answer, `registration` reports the binding's state.
final class SIPPlugin: SwitchyardPlugin {
    static let messagesPort = "messages"
    static let sendPort = "send"
    static let registrationPort = "registration"
    static let sentPort = "sent"
    static let controlPort = "control"
    static let historyPort = "history"
    static let historyQueryPiece = "history_query"

    /// Decoded by `validate` before anything starts (see ``SwitchyardPlugin/configuration``).
    static let configuration: (any PluginConfiguration.Type)? = SIPConfiguration.self

    static let manifest = PluginManifest(
        name: "sip",
        version: "0.1.0",
        summary: "SIP pager-mode messaging (MESSAGE, REGISTER with digest auth) over UDP, TCP and TLS",
        ports: [
            PortDeclaration(
                name: messagesPort, direction: .source, types: [SIPEnvelopes.messageType],
                summary: "Each MESSAGE received, once, answered 200 (or 202) when the routes have it"),
            PortDeclaration(
                name: sendPort, direction: .sink, types: ["*"],
                summary: "Sends a MESSAGE per envelope; acknowledged on a 2xx, failed on 4xx-6xx or Timer F",
                preferences: SIPSendPreferences.jsonSchema),
            PortDeclaration(
                name: registrationPort, direction: .source, types: [SIPEnvelopes.registrationType],
                summary: "The registration state each time it changes"),
            PortDeclaration(
                name: sentPort, direction: .source, types: [SIPEnvelopes.outcomeType],
                summary: "sip.Outcome {envelope_id, to, status, reason, outcome, attempts} for every MESSAGE send finished"),
            PortDeclaration(
                name: controlPort, direction: .sink, types: [SIPEnvelopes.controlType],
                summary: "sip.Control {action: register | unregister | refresh | clear_history, peer}: registration on demand"),
            PortDeclaration(
                name: historyPort, direction: .source, types: [SIPEnvelopes.historyEventType], requires: "history",
                summary: "sip.HistoryEvent {event: added | updated | removed | reset, entry, ids} as the history changes"),
            PortDeclaration(
                name: historyQueryPiece, direction: .service, types: ["*"], requires: "history",
                summary: "The history, newest first: input {peer, since, limit}, output {identity, total, entries}"),
        ],
        types: [
            SIPEnvelopes.messageType: true,
            SIPEnvelopes.sendType: [
                "type": "object",
                "additionalProperties": false,
                "required": ["to"],
                "properties": [
                    "to": ["type": "string", "pattern": "^<?sips?:"],
                    "body": [:],
                    "content_type": ["type": "string"],
                    "headers": ["type": "object", "additionalProperties": ["type": "string"]],
                ],
            ],
            SIPEnvelopes.outcomeType: [
                "type": "object",
                "required": ["envelope_id", "to", "status", "reason", "outcome", "attempts"],
                "properties": [
                    "envelope_id": ["type": "string"], "to": ["type": "string"], "status": ["type": "integer"],
                    "reason": ["type": "string"], "outcome": ["enum": ["ok", "retry", "reject"]], "attempts": ["type": "integer"],
                ],
            ],
            SIPEnvelopes.controlType: [
                "type": "object", "additionalProperties": false, "required": ["action"],
                "properties": [
                    "action": ["enum": .array(SIPControlAction.allCases.map { .string($0.rawValue) })],
                    "peer": ["type": "string", "pattern": "^<?sips?:"],
                ],
            ],
            SIPEnvelopes.historyEventType: [
                "type": "object", "required": ["event", "identity"],
                "properties": [
                    "event": ["enum": ["added", "updated", "removed", "reset"]], "identity": ["type": "string"],
                    "entry": ["type": "object"], "ids": ["type": "array", "items": ["type": "integer"]],
                ],
            ],
            SIPEnvelopes.registrationType: [
                "type": "object",
                "required": ["state", "aor"],
                "properties": [
                    "state": ["enum": ["registering", "registered", "unregistered", "failed"]],
                    "aor": ["type": "string"], "contact": ["type": "string"], "expires": ["type": "integer"],
                    "reason": ["type": "string"],
                ],
            ],
        ],
        config: SIPConfiguration.jsonSchema,
        commands: commands
    )

    private let context: PluginContext
    /// The configuration as given and as parsed; a reconfigure replaces both (read by deliveries
    /// on route threads).
    private let current: Mutex<(config: JSONValue, configuration: SIPConfiguration)>
    private let agent: SIPAgent

    /// The settings that shape the sockets: a change in any of them needs new sockets, so a
    /// new instance.
    static let socketKeys = ["transport", "listen", "tls", "limits", "max_body_bytes"]
    /// The settings whose change needs a new registration.
    static let registrationKeys = ["identity", "register", "proxy"]

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        let configuration = try SIPConfiguration(config: config)
        current = Mutex((config, configuration))
        agent = SIPAgent(configuration: configuration, context: context)
    }

    private var configuration: SIPConfiguration { current.withLock { $0.configuration } }

    /// Adopts everything but a change of the sockets (``socketKeys``): the listening sockets
    /// and connections stay; a changed identity or registrar registers again.
    func reconfigure(_ config: JSONValue) throws -> Bool {
        let old = current.withLock { $0.config }
        guard Self.socketKeys.allSatisfy({ config[$0] == old[$0] }) else { return false }
        let configuration = try SIPConfiguration(config: config)
        // Keeping a history or not is a new instance too: the ports it enables change.
        guard (configuration.history == nil) == (self.configuration.history == nil) else { return false }
        agent.adopt(configuration, registrationChanged: Self.registrationKeys.contains { config[$0] != old[$0] })
        current.withLock { $0 = (config, configuration) }
        // A raised max_in_flight is room the router, if it was refused, has not heard of.
        context.sinkHasRoom()
        return true
    }

    func start() throws { try agent.start() }

    func stop() { agent.stop() }

    func canAccept(on port: String) -> Bool {
        guard port == Self.sendPort else { return true }
        return agent.environment.outstanding.load(ordering: .relaxed) < current.withLock { $0.configuration.maximumInFlight }
    }

    func settled(token: UInt64, outcome: DeliveryOutcome) { agent.settled(token: token, outcome: outcome) }

    /// Refuses an iiidea action on `send` while the instance is unregistered on purpose.
    func enablePiece(port: String, iiidea: String, preferences: JSONValue) throws {
        guard port == Self.sendPort, let reason = agent.sendPieceRefusal() else { return }
        throw PluginError(reason)
    }

    /// Runs `history_query`: `{peer, since, limit}` in, `{identity, total, entries}` out.
    func executePiece(port: String, iiidea: String, input: JSONValue, preferences: JSONValue, completion: PieceCompletion) {
        guard port == Self.historyQueryPiece else { return completion.fail("\(port) is not a service piece") }
        agent.queryHistory(input, completion: completion)
    }

    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery) {
        if port == Self.controlPort {
            let body = envelope.decodedBody()
            guard let word = body["action"]?.stringValue ?? envelope.headers["sip.action"],
                let action = SIPControlAction(rawValue: word)
            else {
                return delivery.ack(.reject, reason: "sip.Control needs action: register, unregister, refresh or clear_history")
            }
            if action == .clearHistory {
                return agent.clearHistory(peer: body["peer"]?.stringValue ?? envelope.headers["sip.peer"], delivery: delivery)
            }
            agent.environment.outstanding.add(1, ordering: .relaxed)
            return agent.eventLoop.execute { self.agent.control(action, delivery: delivery) }
        }
        let outgoing: SIPEnvelopes.Outgoing
        do {
            outgoing = try SIPEnvelopes.outgoing(for: envelope, configuration: configuration)
        } catch {
            context.metric(.counter, "messages_failed_total", 1)
            if let counter = error.counter {
                context.metric(.counter, counter, 1)
                context.log(.warning, "refused an envelope on send: \(error.message)")
            }
            return delivery.ack(.reject, reason: error.message)
        }
        agent.environment.outstanding.add(1, ordering: .relaxed)
        agent.eventLoop.execute { self.agent.send(outgoing, delivery: delivery) }
    }
}
