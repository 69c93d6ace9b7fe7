import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import PushMessage
import PushTokens
import SwitchyardConnectionGuard
import SwitchyardCore
import SwitchyardPluginHTTP
import SwitchyardPluginKit
import Synchronization

/// The instance's HTTP side: the FCM HTTP v1 send endpoint, the plain `/push` endpoint and the
/// token registry endpoints, behind the configured authentication.
final class WebhookServer: Sendable {
    /// The settings and the replay guard of the signing secret; ``adopt(_:)`` replaces them
    /// while requests are served.
    private let current: Mutex<(settings: PushConfiguration.Webhook, replayGuard: WebhookReplayGuard)>
    private let instance: String
    private let context: PluginContext
    private let registry: PushTokenRegistry?
    let waiters = SettlementWaiters()
    private let accepting = Atomic<Bool>(true)
    private let running = Mutex(Running())

    private let http: PluginHTTPServer
    /// The task that expires settlement waits, for ``stop()``.
    private struct Running {
        var sweeper: Task<Void, Never>?
    }

    init(settings: PushConfiguration.Webhook, instance: String, context: PluginContext, registry: PushTokenRegistry?) {
        current = Mutex((settings, WebhookReplayGuard(tolerance: settings.signature?.tolerance ?? .seconds(300))))
        self.instance = instance
        self.context = context
        self.registry = registry
        http = PluginHTTPServer(name: "push.\(instance)", context: context)
    }

    private var settings: PushConfiguration.Webhook { current.withLock { $0.settings } }
    private var replayGuard: WebhookReplayGuard { current.withLock { $0.replayGuard } }

    /// Takes changed settings while serving: the authentication (bearer token, signing secret),
    /// projects, body limit and acknowledgement timeout apply to the next request. The listen
    /// address, TLS and connection limits shape the listening socket and must be unchanged
    /// (the plugin checks). The replay memory is kept unless the signature tolerance changed.
    func adopt(_ settings: PushConfiguration.Webhook) {
        current.withLock { current in
            let tolerance = settings.signature?.tolerance ?? .seconds(300)
            if tolerance != (current.settings.signature?.tolerance ?? .seconds(300)) {
                current.replayGuard = WebhookReplayGuard(tolerance: tolerance)
            }
            current.settings = settings
        }
    }

    /// Binds and serves; returns the bound port once listening, or throws why it cannot (a
    /// reload stops the instance this one replaces before it starts this one, so a port in
    /// use is someone else's).
    func start() throws -> Int {
        let router = Router()
        router.post("/v1/projects/:project/messages:send") { request, context in
            await self.fcmSend(request, project: context.parameters.get("project") ?? "")
        }
        router.post("/push") { request, _ in await self.plainPush(request) }
        router.post("/v1/tokens") { request, _ in await self.registerToken(request) }
        router.delete("/v1/tokens/:token") { request, context in
            await self.dropToken(request, token: context.parameters.get("token") ?? "")
        }
        router.get("/v1/tokens") { request, _ in await self.listTokens(request) }

        let limits = HTTPConnectionLimits(
            name: "webhook", maximumConnections: settings.maximumConnections, maximumPerPeer: settings.maximumPerPeer,
            headerTimeout: settings.headerTimeout,
            bodyTimeout: settings.bodyTimeout,
            context: context)
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [HTTPConnectionGuard(limits: limits)], idleTimeout: TimeAmount(settings.idleTimeout))
        var server = HTTPServerBuilder.http1(configuration: http1)
        if let certificate = settings.certificateFile, let key = settings.keyFile {
            do {
                let tls = TLSConfiguration.makeServerConfiguration(
                    certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                    privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
                server = try .tls(.http1(configuration: http1), tlsConfiguration: tls)
            } catch {
                throw PluginError("tls: cannot load \(certificate) / \(key): \(error)")
            }
        }
        if settings.bearerToken == nil, settings.signature == nil {
            context.log(.warning, "the webhook on \(settings.host):\(settings.port) accepts requests without authentication (set auth:)")
        }
        let sweeper = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                self.waiters.expire()
            }
        }
        running.withLock { $0.sweeper = sweeper }
        let port = try http.start(router: router, server: server, host: settings.host, port: settings.port)
        listening(on: port)
        return port
    }

    private func listening(on port: Int) {
        let scheme = settings.certificateFile == nil ? "http" : "https"
        let host = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        context.log(.notice, "webhook listening on \(scheme)://\(host):\(port)")
        context.metric(.gauge, "webhook_port", Double(port))
        context.metric(.gauge, "ready", 1)
    }

    /// New requests get 503 from now on; the ones waiting are answered as their envelopes settle.
    func quiesce() { accepting.store(false, ordering: .relaxed) }

    /// Stops serving and answers the requests still waiting.
    func stop() async {
        quiesce()
        let stopping = running.withLock { running in
            defer { running = Running() }
            return running
        }
        waiters.resolveAll(.refused(.stopped))
        await http.stop()
        stopping.sweeper?.cancel()
    }

    // MARK: Endpoints

    private func fcmSend(_ request: Request, project: String) async -> Response {
        let body: [UInt8]
        switch await authenticatedBody(request) {
        case .pass(let bytes): body = bytes
        case .refuse(let response): return response
        }
        if !settings.projects.isEmpty, !settings.projects.contains(project) {
            return refuse(
                FCMError(httpStatus: 404, status: "NOT_FOUND", message: "Requested entity was not found: project \(project)"), request)
        }
        let send: FCMSendRequest
        do {
            send = try FCMSendRequest(body: body)
        } catch {
            return refuse(error, request)
        }
        if send.validateOnly {
            return Self.json(200, ["name": .string("projects/\(project)/messages/fake_message_id")])
        }
        var envelope = PushEnvelopes.dataMessage(send.message, project: project, requestID: Self.header(request, WebhookSignature.idHeader))
        WebhookTraceContext.carry(from: request, into: &envelope)
        return await submit(envelope, request) { ["name": .string("projects/\(project)/messages/\($0)")] }
    }

    private func plainPush(_ request: Request) async -> Response {
        let body: [UInt8]
        switch await authenticatedBody(request) {
        case .pass(let bytes): body = bytes
        case .refuse(let response): return response
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue(parsing: body)
        } catch {
            return refuse(.invalidArgument("Invalid JSON payload received. \(error)"), request)
        }
        let message: FCMMessage
        do {
            message = try FCMMessage(validating: parsed, dataValues: .coerced, requireTarget: false, context: "body")
        } catch {
            return refuse(error, request)
        }
        var envelope = PushEnvelopes.dataMessage(message, project: nil, requestID: Self.header(request, WebhookSignature.idHeader))
        WebhookTraceContext.carry(from: request, into: &envelope)
        return await submit(envelope, request) { ["id": .string($0)] }
    }

    private func registerToken(_ request: Request) async -> Response {
        let body: [UInt8]
        switch await authenticatedBody(request) {
        case .pass(let bytes): body = bytes
        case .refuse(let response): return response
        }
        guard let registry else { return refuse(Self.noRegistry, request) }
        let fields = (try? JSONValue(parsing: body))?.objectValue ?? [:]
        guard let token = fields["token"]?.stringValue, !token.isEmpty, token.utf8.count <= 4096 else {
            return refuse(
                .invalidArgument("a JSON object with a non-empty string \"token\" is required (and optional device, user, platform)"),
                request)
        }
        for name in ["device", "user", "platform"] where fields[name] != nil && fields[name]?.stringValue == nil {
            return refuse(.invalidArgument("\"\(name)\" must be a string"), request)
        }
        let now = Int64(Date().timeIntervalSince1970)
        do {
            let new = try registry.register(
                PushTokenRecord(
                    token: token, device: fields["device"]?.stringValue, user: fields["user"]?.stringValue,
                    platform: fields["platform"]?.stringValue, registeredAt: now, updatedAt: now))
            context.metric(.counter, new ? "tokens_registered_total" : "tokens_refreshed_total", 1)
            // Ready again: an iiidea piece refused for want of this token is asked again.
            if new { context.metric(.gauge, "ready", 1) }
            return Self.json(new ? 201 : 200, ["token": .string(token), "new": .bool(new)])
        } catch {
            context.log(.error, "token registry \(registry.path): \(error)")
            return Self.error(.internalError("the token registry failed: \(error)"))
        }
    }

    private func dropToken(_ request: Request, token: String) async -> Response {
        if case .refuse(let response) = await authenticatedBody(request) { return response }
        guard let registry else { return refuse(Self.noRegistry, request) }
        do {
            guard try registry.remove(token: token) else {
                return Self.error(FCMError(httpStatus: 404, status: "NOT_FOUND", message: "no such token"))
            }
            context.metric(.counter, "tokens_dropped_total", 1)
            return Self.json(200, ["token": .string(token), "dropped": true])
        } catch {
            return Self.error(.internalError("the token registry failed: \(error)"))
        }
    }

    private func listTokens(_ request: Request) async -> Response {
        if case .refuse(let response) = await authenticatedBody(request) { return response }
        guard let registry else { return refuse(Self.noRegistry, request) }
        let query = request.uri.queryParameters
        do {
            let records = try registry.records(
                device: query.get("device"), user: query.get("user"), limit: PushPeerValues.listLimit(query.get("limit")))
            return Self.json(200, ["tokens": .array(records.map(PushEnvelopes.json))])
        } catch {
            return Self.error(.internalError("the token registry failed: \(error)"))
        }
    }

    private static let noRegistry = FCMError(
        httpStatus: 404, status: "NOT_FOUND", message: "this instance keeps no token registry (registry:)")

    // MARK: Authentication and answers

    /// The request's body once it is authenticated, or the response refusing it.
    private enum Gate {
        case pass([UInt8])
        case refuse(Response)
    }

    private func authenticatedBody(_ request: Request) async -> Gate {
        // One snapshot for the whole request: a reconfigure in between changes the next one.
        let (settings, replayGuard) = current.withLock { ($0.settings, $0.replayGuard) }
        guard accepting.load(ordering: .relaxed) else { return .refuse(Self.error(.unavailable("the router is stopping"))) }
        // The token first: a stranger's body is never read (the connection guard closes the
        // connection after the answer instead of reading the rest).
        if let token = settings.bearerToken, !BearerToken.matches(header: request.headers[.authorization], expected: token) {
            return .refuse(unauthenticated("missing or wrong bearer token", request))
        }
        // A declared length over the limit is refused before a byte of it is read; without
        // one, collect(upTo:) stops as soon as the limit is passed.
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        let buffer: ByteBuffer
        do {
            if let declared, declared > settings.maximumBodySize { throw PluginError("declared \(declared) bytes") }
            buffer = try await request.body.collect(upTo: settings.maximumBodySize)
        } catch {
            context.metric(.counter, "webhook_invalid_total", 1)
            context.metric(.counter, "webhook_too_large_total", 1)
            context.log(
                .warning, "refused \(request.method) \(request.uri.path): the body is over max_body (\(settings.maximumBodySize) bytes)")
            return .refuse(
                Self.error(
                    FCMError(
                        httpStatus: 413, status: "INVALID_ARGUMENT", message: "the request body is over \(settings.maximumBodySize) bytes"))
            )
        }
        let body = Array(buffer.readableBytesView)
        if let signature = settings.signature {
            let now = Int64(Date().timeIntervalSince1970)
            let id = Self.header(request, WebhookSignature.idHeader)
            do {
                try signature.verify(
                    id: id, timestamp: Self.header(request, WebhookSignature.timestampHeader),
                    signatures: Self.header(request, WebhookSignature.signatureHeader), body: body, now: now)
            } catch {
                return .refuse(unauthenticated("signature: \(error)", request))
            }
            if let id, !replayGuard.admit(id, now: now) {
                context.metric(.counter, "webhook_replayed_total", 1)
                context.log(.warning, "refused \(request.method) \(request.uri.path): webhook-id \(id) was already accepted (replay)")
                return .refuse(
                    Self.error(FCMError(httpStatus: 409, status: "ALREADY_EXISTS", message: "webhook-id \(id) was already accepted")))
            }
        }
        return .pass(body)
    }

    private func unauthenticated(_ reason: String, _ request: Request) -> Response {
        context.metric(.counter, "webhook_unauthorized_total", 1)
        context.log(
            .warning,
            "refused \(request.method) \(request.uri.path) from \(Self.header(request, "x-forwarded-for") ?? "a client"): \(reason)")
        return Self.error(.unauthenticated("Request had invalid authentication credentials: \(reason)"))
    }

    /// A refusal of a request's content: counted, logged with the reason, answered FCM's way.
    private func refuse(_ error: FCMError, _ request: Request) -> Response {
        context.metric(.counter, "webhook_invalid_total", 1)
        context.log(.warning, "refused \(request.method) \(request.uri.path): \(error)")
        signatureRetryAllowed(request)
        return Self.error(error)
    }

    /// A request that was not accepted may be sent again with the same webhook-id.
    private func signatureRetryAllowed(_ request: Request) {
        if settings.signature != nil, let id = Self.header(request, WebhookSignature.idHeader) { replayGuard.forget(id) }
    }

    /// Emits the envelope and answers once the router has settled it.
    private func submit(_ envelope: Envelope, _ request: Request, success: (String) -> JSONValue) async -> Response {
        let answer = await waiters.submit(timeout: settings.acknowledgeTimeout) { token in
            context.emit(envelope, on: PushPlugin.messagesPort, settleToken: token)
        }
        let failure: FCMError
        switch answer {
        case .settled(.ok):
            context.metric(.counter, "webhook_accepted_total", 1)
            return Self.json(200, success(envelope.id))
        case .settled(.retry): failure = .unavailable("the router could not take the message now; retry")
        case .settled(.reject): failure = .internalError("a route dropped the message")
        case .refused(.full): failure = .quotaExceeded("the router's queue is full; retry later")
        case .refused(.stopped): failure = .unavailable("the router is stopping")
        case .refused(let result): failure = .internalError("the router refused the message (\(result))")
        case .timedOut:
            failure = .unavailable(
                "the router did not confirm the message within \(settings.acknowledgeTimeout); it may still be delivered")
        }
        context.metric(.counter, "webhook_unavailable_total", 1)
        context.log(.warning, "\(request.method) \(request.uri.path): envelope \(envelope.id) not accepted: \(failure)")
        signatureRetryAllowed(request)
        var response = Self.error(failure)
        if failure.httpStatus == 429 || failure.httpStatus == 503 { response.headers[.retryAfter] = "1" }
        return response
    }

    static func header(_ request: Request, _ name: String) -> String? {
        HTTPField.Name(name).flatMap { request.headers[$0] }
    }

    static func json(_ status: Int, _ body: JSONValue) -> Response {
        Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json; charset=UTF-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body.serializedBytes())))
    }

    static func error(_ error: FCMError) -> Response { json(error.httpStatus, error.body) }
}
