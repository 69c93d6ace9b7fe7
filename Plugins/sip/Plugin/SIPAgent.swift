import DequeModule
import NIOCore
import NIOPosix
import SIPCodec
import SwitchyardCore
import SwitchyardPluginHTTP
import SwitchyardPluginKit
import Synchronization

/// One sip instance's user agent: its transactions (RFC 3261 §17) on a ``SIPTransport``,
/// digest authentication, registration (``SIPAgent+Registration``) and pager-mode messaging
/// (``SIPAgent+Messages``).
///
/// Every mutable field is confined to `eventLoop` (a `NIOLoopBoundBox`, checked at each
/// access); the entry points hop onto it.
final class SIPAgent: Sendable {
    /// How a client request ended, after any authentication round.
    enum RequestOutcome {
        /// A final response (2xx-6xx).
        case response(SIPMessage)
        /// Timer F: no final response in 64·T1.
        case timedOut
        /// The transport could not send it.
        case transportFailed(String)
    }

    /// A client transaction and what it needs to run: the request as sent, where to, its timers.
    struct ClientTransaction {
        var machine: SIPClientTransaction
        var bytes: [UInt8]
        var target: SIPTarget
        /// The request's CSeq: a response must carry the same (RFC 3261 §8.1.3.3).
        var cseq: (number: UInt32, method: String)?
        var timers: [SIPTimer: Scheduled<Void>] = [:]
        var response: SIPMessage?
        var completion: (RequestOutcome) -> Void
    }

    /// A server transaction: the request, where its answers go, what was last answered.
    struct ServerTransaction {
        var machine: SIPServerTransaction
        var request: SIPMessage
        var peer: SIPPeer
        var lastResponse: [UInt8] = []
        var timer: Scheduled<Void>?
    }

    /// A digest challenge this agent answers, and how often its nonce has been used.
    struct CachedChallenge {
        var challenge: SIPDigest.Challenge
        var count: UInt32
    }

    // Each field confined to the event loop has a box of its own (`NIOLoopBoundBox`, checked
    // at each access): one box for all would make any two overlapping accesses conflict.
    private let _configuration: NIOLoopBoundBox<SIPConfiguration>
    private let _clients: NIOLoopBoundBox<[String: ClientTransaction]>
    private let _servers: NIOLoopBoundBox<[String: ServerTransaction]>
    private let _challenges: NIOLoopBoundBox<[String: CachedChallenge]>
    private let _stopped: NIOLoopBoundBox<Bool>
    private let _sweepTask: NIOLoopBoundBox<RepeatedTask?>
    private let _registration: NIOLoopBoundBox<RegistrationState>
    private let _incoming: NIOLoopBoundBox<[UInt64: IncomingMessage]>
    private let _waiting: NIOLoopBoundBox<[String: UInt64]>
    private let _answered: NIOLoopBoundBox<[String: AnsweredMessage]>
    private let _answeredOrder: NIOLoopBoundBox<Deque<(key: String, expiry: NIODeadline)>>
    private let _nextSettleToken: NIOLoopBoundBox<UInt64>
    private let _sendAttempts: NIOLoopBoundBox<[String: Int]>
    private let _sendAttemptsOrder: NIOLoopBoundBox<Deque<String>>

    /// Replaced by a reconfigure (``adopt(_:registrationChanged:)``), on `eventLoop` like the rest.
    var configuration: SIPConfiguration {
        get { _configuration.value }
        _modify { yield &_configuration.value }
    }
    var clients: [String: ClientTransaction] {
        get { _clients.value }
        _modify { yield &_clients.value }
    }
    var servers: [String: ServerTransaction] {
        get { _servers.value }
        _modify { yield &_servers.value }
    }
    /// The last challenges (by ``challengeKey(_:_:)``): answered up front on later requests,
    /// saving the 401/407 round trip while the nonce lasts.
    var challenges: [String: CachedChallenge] {
        get { _challenges.value }
        _modify { yield &_challenges.value }
    }
    var stopped: Bool {
        get { _stopped.value }
        _modify { yield &_stopped.value }
    }
    var sweepTask: RepeatedTask? {
        get { _sweepTask.value }
        _modify { yield &_sweepTask.value }
    }
    var registration: RegistrationState {
        get { _registration.value }
        _modify { yield &_registration.value }
    }
    var incoming: [UInt64: IncomingMessage] {
        get { _incoming.value }
        _modify { yield &_incoming.value }
    }
    /// The settle token of each MESSAGE waiting for the router, by ``dialogKey(_:)``.
    var waiting: [String: UInt64] {
        get { _waiting.value }
        _modify { yield &_waiting.value }
    }
    var answered: [String: AnsweredMessage] {
        get { _answered.value }
        _modify { yield &_answered.value }
    }
    /// Answered keys in the order they expire (one window for all): the sweep pops the front.
    var answeredOrder: Deque<(key: String, expiry: NIODeadline)> {
        get { _answeredOrder.value }
        _modify { yield &_answeredOrder.value }
    }
    var nextSettleToken: UInt64 {
        get { _nextSettleToken.value }
        _modify { yield &_nextSettleToken.value }
    }
    /// MESSAGEs sent per envelope id while the router may still retry it (its `sip.Outcome`'s
    /// `attempts`), oldest forgotten first past ``maximumRememberedAttempts``.
    var sendAttempts: [String: Int] {
        get { _sendAttempts.value }
        _modify { yield &_sendAttempts.value }
    }
    var sendAttemptsOrder: Deque<String> {
        get { _sendAttemptsOrder.value }
        _modify { yield &_sendAttemptsOrder.value }
    }
    let context: PluginContext
    let eventLoop: any EventLoop
    let transport: SIPTransport

    /// How many far ends' challenges are kept; past it the cache starts again.
    static let maximumCachedChallenges = 64

    // Registration (SIPAgent+Registration).

    // Messaging (SIPAgent+Messages).
    static let maximumRememberedAttempts = 10_000
    /// Deliveries taken from the router and not yet acknowledged (read from any thread).
    let outstanding = Atomic<Int>(0)
    /// The message history (SIPAgent+History), set once by `start()` and read from any thread.
    let historyBox = Mutex<SIPHistory?>(nil)

    init(configuration: SIPConfiguration, context: PluginContext) {
        self.context = context
        eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        _configuration = .makeBoxSendingValue(configuration, as: SIPConfiguration.self, eventLoop: eventLoop)
        _clients = .makeBoxSendingValue([:], as: [String: ClientTransaction].self, eventLoop: eventLoop)
        _servers = .makeBoxSendingValue([:], as: [String: ServerTransaction].self, eventLoop: eventLoop)
        _challenges = .makeBoxSendingValue([:], as: [String: CachedChallenge].self, eventLoop: eventLoop)
        _stopped = .makeBoxSendingValue(false, as: Bool.self, eventLoop: eventLoop)
        _sweepTask = .makeBoxSendingValue(nil, as: RepeatedTask?.self, eventLoop: eventLoop)
        _registration = .makeBoxSendingValue(RegistrationState(), as: RegistrationState.self, eventLoop: eventLoop)
        _incoming = .makeBoxSendingValue([:], as: [UInt64: IncomingMessage].self, eventLoop: eventLoop)
        _waiting = .makeBoxSendingValue([:], as: [String: UInt64].self, eventLoop: eventLoop)
        _answered = .makeBoxSendingValue([:], as: [String: AnsweredMessage].self, eventLoop: eventLoop)
        _answeredOrder = .makeBoxSendingValue([], as: Deque<(key: String, expiry: NIODeadline)>.self, eventLoop: eventLoop)
        _nextSettleToken = .makeBoxSendingValue(0, as: UInt64.self, eventLoop: eventLoop)
        _sendAttempts = .makeBoxSendingValue([:], as: [String: Int].self, eventLoop: eventLoop)
        _sendAttemptsOrder = .makeBoxSendingValue([], as: Deque<String>.self, eventLoop: eventLoop)
        transport = SIPTransport(configuration: configuration, eventLoop: eventLoop, reporter: PluginGuardReporter(context: context))
    }

    // MARK: Entry points (any thread)

    /// Binds the sockets (so a start error reaches the user) and starts registering.
    func start() throws {
        context.metric(.gauge, "ready", 0)
        context.metric(.gauge, "registered", 0)
        // Read on the loop, where it lives (no reconfigure can run before start returns).
        let configuration = try eventLoop.submit { self.configuration }.wait()
        try openHistory(configuration)
        let bound = eventLoop.flatSubmit { self.transport.start(reportingTo: self) }
        do {
            try bound.wait()
        } catch {
            let listen = "\(configuration.listenHost):\(configuration.listenPort)"
            throw PluginError("sip: cannot listen on \(listen) (UDP and TCP): \(error)")
        }
        eventLoop.execute {
            self.context.log(
                .info,
                "listening on \(self.configuration.listenHost):\(self.transport.port) (UDP, TCP)"
                    + (self.transport.tlsPort.map { ", TLS on \($0)" } ?? ""))
            self.sweepTask = self.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in self.sweep() }
            if let registration = self.configuration.registration {
                self.registration.wanted = registration.onStart
                if registration.onStart {
                    self.register()
                } else {
                    self.context.log(.info, "not registering until a sip.Control {action: register} asks (register.on_start: false)")
                    self.context.metric(.gauge, "ready", 1)
                }
            } else {
                self.context.metric(.gauge, "ready", 1)
            }
        }
    }

    /// Unregisters (waiting up to a few seconds for the registrar) and closes the sockets;
    /// what is still waiting is failed so the router can account for it.
    func stop() {
        let unregistered = eventLoop.flatSubmit { self.unregister() }
        _ = try? unregistered.wait()
        let closed = eventLoop.flatSubmit {
            self.stopped = true
            self.sweepTask?.cancel()
            self.registration.timer?.cancel()
            // Control actions waiting for the registrar are answered now: no answer will come.
            let waiting = self.registration.waiting
            self.registration.waiting = []
            for delivery in waiting { self.finish(delivery, .retry, reason: "sip instance stopped") }
            for (branch, _) in self.clients { self.finishClient(branch, .transportFailed("sip instance stopped")) }
            for (token, message) in self.incoming {
                self.incoming[token] = nil
                for key in message.serverKeys {
                    self.respond(
                        key, status: 503, reason: "Service Unavailable", headers: [("Retry-After", String(Self.retryAfterSeconds))])
                }
            }
            return self.transport.stop()
        }
        _ = try? closed.wait()
        // Every MESSAGE answered or sent before the stop is in the history before the store
        // is closed to this instance.
        history?.flush()
    }

    // MARK: Client transactions

    /// Sends a request in a new client transaction: adds the Via (with `rport` and a fresh
    /// branch), moves a large request from UDP to TCP (RFC 3261 §18.1.1), and runs timers.
    func send(_ request: SIPMessage, to target: SIPTarget, completion: @escaping (RequestOutcome) -> Void) {
        eventLoop.assertInEventLoop()
        var target = target
        var request = request
        // 1300 bytes with room for the Via this adds.
        if target.transport == .udp, request.serialized().count + 120 > 1300 { target.transport = .tcp }
        let branch = "z9hG4bK" + Self.randomToken(16)
        var via = SIPVia(transport: target.transport.viaName, host: viaHost, port: localPort(for: target.transport))
        via.parameters.set("rport", nil)
        via.parameters.set("branch", branch)
        request.headers.prepend("Via", via.text)
        let bytes = request.serialized()
        var machine = SIPClientTransaction(timers: configuration.timers, reliable: target.transport.isReliable)
        let actions = machine.start()
        clients[branch] = ClientTransaction(
            machine: machine, bytes: bytes, target: target, cseq: request.headers.cseq, completion: completion)
        context.metric(.counter, "requests_sent_total", 1)
        perform(actions, branch: branch)
    }

    private func perform(_ actions: [SIPClientTransaction.Action], branch: String) {
        for action in actions {
            guard var transaction = clients[branch] else { return }
            switch action {
            case .sendRequest:
                let target = transaction.target
                transport.send(transaction.bytes, to: target).whenFailure { error in
                    self.context.log(.warning, "sending to \(target): \(error)")
                    self.handle(.transportError, branch: branch)
                }
                if transaction.machine.state != .trying || transaction.timers[.e] != nil {
                    context.metric(.counter, "retransmissions_total", 1)
                }
            case .schedule(let timer, let delay):
                transaction.timers[timer]?.cancel()
                transaction.timers[timer] = eventLoop.scheduleTask(in: TimeAmount(delay)) { self.handle(.timer(timer), branch: branch) }
                clients[branch] = transaction
            case .cancel(let timer):
                transaction.timers[timer]?.cancel()
                transaction.timers[timer] = nil
                clients[branch] = transaction
            case .deliver(let status):
                guard status >= 200, let response = transaction.response else { continue }
                transaction.completion(.response(response))
            case .timedOut:
                context.metric(.counter, "timeouts_total", 1)
                transaction.completion(.timedOut)
            case .failed:
                transaction.completion(.transportFailed("could not send to \(transaction.target)"))
            case .terminate:
                for timer in transaction.timers.values { timer.cancel() }
                clients[branch] = nil
            }
        }
    }

    func handle(_ event: SIPClientTransaction.Event, branch: String) {
        guard var transaction = clients[branch] else { return }
        let actions = transaction.machine.handle(event)
        clients[branch] = transaction
        perform(actions, branch: branch)
    }

    /// Ends a transaction from outside the state machine (shutdown).
    private func finishClient(_ branch: String, _ outcome: RequestOutcome) {
        guard let transaction = clients.removeValue(forKey: branch) else { return }
        for timer in transaction.timers.values { timer.cancel() }
        transaction.completion(outcome)
    }

    // MARK: Requests with authentication

    /// Sends a request and answers 401/407 challenges with the identity's credentials (MD5 or
    /// SHA-256, the strongest offered; qop=auth). A challenge to credentials just given, not
    /// marked stale, is the final answer: the credentials are wrong.
    func request(
        _ request: SIPMessage, to target: SIPTarget, authenticationRounds: Int = 0, completion: @escaping (RequestOutcome) -> Void
    ) {
        var request = request
        let authorized = isCredentialTarget(target) ? authorize(&request) : [:]
        send(request, to: target) { outcome in
            guard case .response(let response) = outcome, response.status == 401 || response.status == 407,
                self.configuration.identity.password != nil, authenticationRounds < 2
            else { return completion(outcome) }
            let proxy = response.status == 407
            let header = proxy ? "Proxy-Authorization" : "Authorization"
            let offered = response.headers.values(proxy ? "Proxy-Authenticate" : "WWW-Authenticate")
            guard let challenge = SIPDigest.Challenge.strongest(in: offered) else { return completion(outcome) }
            if let refusal = self.refusal(of: challenge, status: response.status ?? 0, from: target) {
                self.context.metric(.counter, "challenges_refused_total", 1)
                self.context.log(.warning, refusal)
                return completion(outcome)
            }
            // Answered credentials challenged again without stale=true: they are wrong. (An
            // answer to a cached nonce gets one fresh try.)
            if let nonce = authorized[header], !challenge.stale, nonce == challenge.nonce || authenticationRounds > 0 {
                return completion(outcome)
            }
            // Challenges are cached per far end: bounded, as envelopes choose the far ends.
            if self.challenges.count >= Self.maximumCachedChallenges { self.challenges.removeAll() }
            self.challenges[Self.challengeKey(header, request)] = CachedChallenge(challenge: challenge, count: 0)
            var retry = request
            retry.headers.remove("Via")
            if let cseq = retry.headers.cseq {
                // Our own numbers stay below 2^31 (RFC 3261 §8.1.1.5): no retry past it.
                guard cseq.number < SIPHeaders.maximumCSeq else { return completion(outcome) }
                retry.headers.set("CSeq", "\(cseq.number + 1) \(cseq.method)")
            }
            self.request(retry, to: target, authenticationRounds: authenticationRounds + 1, completion: completion)
        }
    }

    /// Why a challenge is not answered, nil when it is: credentials go only to the configured
    /// registrar or outbound proxy, and only for `identity.realm` when that is set.
    private func refusal(of challenge: SIPDigest.Challenge, status: Int, from target: SIPTarget) -> String? {
        guard isCredentialTarget(target) else {
            return "not answering a \(status) challenge (realm '\(SIPEnvelopes.escaped(challenge.realm))') from \(target): "
                + "credentials go only to the registrar or proxy configured"
        }
        if let realm = configuration.identity.realm, realm != challenge.realm {
            return "not answering a \(status) challenge from \(target) for realm '\(SIPEnvelopes.escaped(challenge.realm))': "
                + "identity.realm is '\(realm)'"
        }
        return nil
    }

    /// Whether `target` is the configured registrar or outbound proxy.
    private func isCredentialTarget(_ target: SIPTarget) -> Bool {
        let trusted = [configuration.outboundProxy, configuration.registration.flatMap { try? self.target(for: $0.registrarURI) }]
        return trusted.contains { $0?.host.lowercased() == target.host.lowercased() && $0?.port == target.port }
    }

    /// Adds answers to the cached challenges; returns the nonce answered per header.
    private func authorize(_ request: inout SIPMessage) -> [String: String] {
        guard let password = configuration.identity.password, case .request(let method, let uri) = request.startLine else { return [:] }
        var answered: [String: String] = [:]
        for header in ["Authorization", "Proxy-Authorization"] {
            request.headers.remove(header)
            let key = Self.challengeKey(header, request)
            guard var cached = challenges[key] else { continue }
            // A nonce used 2^32-1 times is done with: the server challenges again.
            guard cached.count < UInt32.max else {
                challenges[key] = nil
                continue
            }
            cached.count += 1
            challenges[key] = cached
            let value = SIPDigest.authorization(
                challenge: cached.challenge, username: configuration.identity.impi, password: password, method: method, uri: uri,
                cnonce: Self.randomToken(16), nc: cached.count)
            request.headers.append(header, value)
            answered[header] = cached.challenge.nonce
        }
        return answered
    }

    /// Where a cached challenge applies: a proxy's (407) to every request through it; a
    /// server's (401) only to requests for the same Request-URI, so one far end's credentials
    /// never travel to another.
    static func challengeKey(_ header: String, _ request: SIPMessage) -> String {
        guard header == "Authorization", case .request(_, let uri) = request.startLine else { return header }
        return header + " " + uri
    }

    // MARK: Helpers

    /// The host written into Via and Contact.
    var viaHost: String {
        let host = configuration.advertisedHost
        return host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    /// The local port requests on `transport` say they come from.
    func localPort(for transport: SIPTransportKind) -> Int {
        transport == .tls ? (self.transport.tlsPort ?? self.transport.port) : self.transport.port
    }

    /// Where a request to `uri` goes: the outbound proxy, or the URI's own host.
    func target(for uri: String) throws(PluginError) -> SIPTarget {
        if let proxy = configuration.outboundProxy { return proxy }
        return try SIPTarget(uri: uri, fallback: configuration.transport)
    }

    /// Headers every request this agent starts carries.
    func newRequest(method: String, uri: String, to: String, callID: String, cseq: UInt32, fromTag: String) -> SIPMessage {
        var request = SIPMessage(startLine: .request(method: method, uri: uri))
        request.headers.append("Max-Forwards", "70")
        let identity = configuration.identity
        let from = SIPAddress(displayName: identity.displayName, uri: identity.impu)
        request.headers.append("From", from.text + ";tag=" + fromTag)
        request.headers.append("To", "<\(to)>")
        request.headers.append("Call-ID", callID)
        request.headers.append("CSeq", "\(cseq) \(method)")
        request.headers.append("User-Agent", "Switchyard")
        return request
    }

    /// Forgets answered-message memory past its window.
    private func sweep() {
        let now = NIODeadline.now()
        while let first = answeredOrder.first, first.expiry <= now {
            answeredOrder.removeFirst()
            if let entry = answered[first.key], entry.expiry <= now { answered[first.key] = nil }
        }
    }

    static func randomToken(_ length: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<length).map { _ in alphabet.randomElement() ?? "x" })
    }
}
