import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import PushMessage
import PushTokens
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// Sends envelopes with FCM HTTP v1: builds the message (target, string data, size limit),
/// signs in with the service account, retries what FCM says is worth retrying (429, 500, 503,
/// honouring Retry-After), drops tokens FCM calls UNREGISTERED, and acknowledges the router
/// only on FCM's 200.
final class FCMSender: Sendable {
    private let settings: PushConfiguration.Sender
    private let project: String
    private let tokens: AccessTokenProvider
    private let client: HTTPClient
    private let registry: PushTokenRegistry?
    private let context: PluginContext
    private let inFlight = Atomic<Int>(0)
    private let tasks = Mutex(Sends())
    private let nextTask = Atomic<UInt64>(0)

    init(settings: PushConfiguration.Sender, client: HTTPClient, registry: PushTokenRegistry?, context: PluginContext) throws {
        let account = try ServiceAccount(file: settings.serviceAccountFile)
        guard let project = settings.project ?? account.projectID else {
            throw PluginError("fcm.project is required: the service account file has no project_id")
        }
        self.settings = settings
        self.project = project
        self.client = client
        self.registry = registry
        self.context = context
        tokens = try AccessTokenProvider(
            account: account, tokenURL: settings.tokenURL, audience: settings.audience, client: client, timeout: settings.requestTimeout)
    }

    /// Whether another delivery fits the in-flight limit.
    var hasRoom: Bool { inFlight.load(ordering: .relaxed) < settings.maximumInFlight }

    /// Sends one envelope; acknowledges `delivery` when done.
    func send(_ envelope: Envelope, delivery: Delivery) {
        let messages: [FCMMessage]
        do {
            messages = try self.messages(for: envelope)
        } catch {
            context.metric(.counter, "fcm_invalid_total", 1)
            context.log(.warning, "envelope \(envelope.id) not sent: \(error)")
            delivery.ack(.reject, reason: "\(error)")
            return
        }
        inFlight.add(1, ordering: .relaxed)
        let key = nextTask.add(1, ordering: .relaxed).newValue
        // Only a well-formed trace context goes on (see TraceContext.outgoing).
        let traceContext = TraceContext.outgoing(envelope.headers)
        let task = Task {
            var outcome = DeliveryOutcome.ok
            var reasons: [String] = []
            var delivered = 0
            for message in messages {
                let result = await self.send(message, traceContext: traceContext)
                switch result {
                case .sent: delivered += 1
                case .failed(let error, let retryable):
                    reasons.append(error)
                    if retryable { outcome = .retry } else if outcome == .ok { outcome = .reject }
                case .unregistered(let error):
                    reasons.append(error)
                    // A device's or user's other tokens may still take it; a single token cannot.
                    if messages.count == 1, outcome == .ok { outcome = .reject }
                }
            }
            if messages.count > 1, delivered == 0, outcome == .ok { outcome = .reject }
            self.inFlight.subtract(1, ordering: .relaxed)
            self.tasks.withLock { sends in
                if sends.running.removeValue(forKey: key) == nil { sends.finishedEarly.insert(key) }
            }
            delivery.ack(outcome, reason: reasons.joined(separator: "; "))
            self.context.sinkHasRoom()
        }
        tasks.withLock { sends in
            // The task may already have finished, before it could be recorded.
            if sends.finishedEarly.remove(key) == nil { sends.running[key] = task }
        }
    }

    /// The sends in progress, for ``stop()``.
    private struct Sends {
        var running: [UInt64: Task<Void, Never>] = [:]
        var finishedEarly: Set<UInt64> = []
    }

    /// Cancels retries in progress and waits for the sends to finish.
    func stop() async {
        let running = tasks.withLock { sends in
            defer { sends.running.removeAll() }
            return Array(sends.running.values)
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }

    /// The FCM messages for an envelope: one, or one per registered token of a device or user.
    func messages(for envelope: Envelope) throws -> [FCMMessage] {
        let body: JSONValue
        do {
            body = try JSONValue(parsing: envelope.body)
        } catch {
            throw PluginError("the body is not JSON (\(error)); use map: to build an FCM message")
        }
        // A whole send request (`{"message": …}`) or the message itself; other members (such as
        // the `project` and `notification_id` of a push.DataMessage) are not FCM's and stay here.
        let source = body["message"] ?? body
        guard var fields = source.objectValue else { throw PluginError("the body is \(source.typeName), not an FCM message object") }
        // A message that names nobody goes where the iiidea's action preferences say.
        if !fields.keys.contains(where: { FCMMessage.targetFields.contains($0) || $0 == "device" || $0 == "user" }),
            let preferences = PushSendPreferences(iiideaPreferencesOf: envelope)
        {
            fields.merge(preferences.target) { own, _ in own }
        }
        var message = fields.filter { FCMMessage.targetFields.contains($0.key) || Self.messageFields.contains($0.key) }
        let device = fields["device"]?.stringValue
        let user = fields["user"]?.stringValue
        if device != nil || user != nil {
            guard message.keys.allSatisfy({ !FCMMessage.targetFields.contains($0) }) else {
                throw PluginError("give either a device/user or an FCM target (token, topic, condition, fid), not both")
            }
            guard let registry else { throw PluginError("device/user targets need a token registry (registry:)") }
            let records = try registry.records(device: device, user: user)
            guard !records.isEmpty else {
                throw PluginError("no registered token for \(device.map { "device \($0)" } ?? "") \(user.map { "user \($0)" } ?? "")")
            }
            return try records.map { record in
                message["token"] = .string(record.token)
                return try FCMMessage(validating: .object(message), dataValues: .coerced)
            }
        }
        return [try FCMMessage(validating: .object(message), dataValues: .coerced)]
    }

    private static let messageFields: Set<String> = ["data", "notification", "android", "apns", "webpush", "fcm_options"]

    private enum Result {
        case sent
        case failed(String, retryable: Bool)
        case unregistered(String)
    }

    /// Sends one message; `traceContext` (the envelope's `traceparent` and `tracestate`) goes
    /// with it as HTTP headers.
    private func send(_ message: FCMMessage, traceContext: (parent: String, state: String?)?) async -> Result {
        var request = HTTPClientRequest(url: "\(settings.baseURL)/v1/projects/\(project)/messages:send")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json; charset=UTF-8")
        if let traceContext {
            request.headers.add(name: TraceContext.parentHeader, value: traceContext.parent)
            if let state = traceContext.state { request.headers.add(name: TraceContext.stateHeader, value: state) }
        }
        var body: [String: JSONValue] = ["message": message.json]
        if settings.validateOnly { body["validate_only"] = true }
        let bytes = JSONValue.object(body).serializedBytes()
        var lastError = ""
        var refreshedAfter401 = false
        var attempt = 0
        while attempt < settings.attempts, !Task.isCancelled {
            attempt += 1
            var retryAfter: Duration?
            do {
                let token = try await tokens.token()
                request.headers.replaceOrAdd(name: "Authorization", value: "Bearer \(token)")
                request.body = .bytes(ByteBuffer(bytes: bytes))
                let response = try await client.execute(request, timeout: TimeAmount(settings.requestTimeout))
                let answer = try await response.body.collect(upTo: 1 << 20)
                if response.status.code == 200 {
                    context.metric(.counter, "fcm_sent_total", 1)
                    return .sent
                }
                let error = FCMError(httpStatus: Int(response.status.code), responseBody: Array(answer.readableBytesView))
                lastError = "FCM: \(error)"
                switch error.httpStatus {
                case 401 where !refreshedAfter401:
                    // The cached access token may have been revoked: fetch a new one once.
                    refreshedAfter401 = true
                    await tokens.invalidate(token)
                    attempt -= 1
                    continue
                case 404 where error.errorCode == "UNREGISTERED" || error.errorCode == nil, 400 where error.errorCode == "UNREGISTERED":
                    return unregistered(message, error: error)
                case 429, 500, 502, 503, 504:
                    retryAfter = Self.retryAfter(response.headers)
                default:
                    context.metric(.counter, "fcm_failed_total", 1)
                    return .failed(lastError, retryable: false)
                }
            } catch {
                lastError = "FCM request failed: \(error)"
            }
            guard attempt < settings.attempts else { break }
            context.metric(.counter, "fcm_retries_total", 1)
            let delay = min(retryAfter ?? backoff(attempt: attempt), settings.maximumBackoff)
            try? await Task.sleep(for: delay)
        }
        context.metric(.counter, "fcm_failed_total", 1)
        return .failed("\(lastError) (after \(attempt) attempt\(attempt == 1 ? "" : "s"))", retryable: true)
    }

    private func unregistered(_ message: FCMMessage, error: FCMError) -> Result {
        context.metric(.counter, "fcm_unregistered_total", 1)
        guard case .token(let token) = message.target else { return .failed("FCM: \(error)", retryable: false) }
        var note = "FCM: \(error)"
        if let registry {
            do {
                if try registry.remove(token: token) { note += "; token dropped from the registry" }
            } catch {
                context.log(.error, "could not drop unregistered token from \(registry.path): \(error)")
            }
        }
        context.log(.info, note)
        return .unregistered(note)
    }

    /// Exponential backoff with full jitter.
    private func backoff(attempt: Int) -> Duration {
        let ceiling = settings.initialBackoff * (1 << min(attempt - 1, 20))
        let capped = min(ceiling, settings.maximumBackoff)
        return capped * Double.random(in: 0.5...1.0)
    }

    /// `Retry-After` as seconds or an HTTP date, clamped (see ``PushPeerValues/retryAfter(_:now:)``).
    static func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        headers.first(name: "Retry-After").flatMap { PushPeerValues.retryAfter($0, now: Date()) }
    }
}
