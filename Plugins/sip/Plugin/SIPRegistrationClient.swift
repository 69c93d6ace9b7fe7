import NIOCore
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// Where the registration binding is.
struct RegistrationState {
    /// One Call-ID and a rising CSeq for every REGISTER of this instance (RFC 3261 §10.2).
    var callID = SIPAgentEnvironment.randomToken(20) + "@switchyard"
    var cseq: UInt32 = 0
    var fromTag = SIPAgentEnvironment.randomToken(10)
    /// `registering`, `registered`, `unregistered` or `failed`: what `sip.Registration` reports.
    var state = "unregistered"
    var granted: Int?
    var expires: Int?
    var inFlight = false
    /// 423 answers in a row: a registrar raising Min-Expires each time is not followed for ever.
    var tooBriefRounds = 0
    var timer: Scheduled<Void>?
    var retryDelay: Duration?
    /// The stream connection the binding rides on: losing it means registering again.
    var connectionKey: String?
    /// Whether the instance should be registered: `register.on_start`, then the last
    /// `sip.Control` action. Unregistered on purpose is ready.
    var wanted = true
    /// `sip.Control` deliveries waiting for the REGISTER they caused to be answered.
    var waiting: [Delivery] = []
}

/// The registration of a ``SIPAgent``'s identity (RFC 3261 §10): REGISTERs, their refresh ahead
/// of expiry, retries with backoff after a failure, 423 Min-Expires rounds, and the removal of
/// the binding on request, reconfigure or stop.
///
/// Owns the binding's state (``RegistrationState``); separate from the agent so that state has
/// one owner, which sends through ``SIPDigestClient`` (the registrar challenges) and reports
/// `sip.Registration` envelopes. Confined to the agent's event loop (a `NIOLoopBoundBox`,
/// checked at each access).
final class SIPRegistrationClient: Sendable {
    private let environment: SIPAgentEnvironment
    private let requests: SIPDigestClient
    private let _binding: NIOLoopBoundBox<RegistrationState>

    init(environment: SIPAgentEnvironment, requests: SIPDigestClient) {
        self.environment = environment
        self.requests = requests
        _binding = .makeBoxSendingValue(RegistrationState(), as: RegistrationState.self, eventLoop: environment.eventLoop)
    }

    /// The binding: replaced by a fresh one when a reconfigure changes the identity.
    var binding: RegistrationState {
        get { _binding.value }
        _modify { yield &_binding.value }
    }

    private var context: PluginContext { environment.context }
    private var configuration: SIPConfiguration { environment.configuration }

    /// The Contact of this instance: where the registrar sends requests for the IMPU.
    var contactURI: String {
        let user = SIPConfiguration.userPart(of: configuration.identity.impu)
        let kind = configuration.outboundProxy?.transport ?? configuration.transport
        let transportParameter = kind == .udp ? "" : ";transport=\(kind.rawValue)"
        return "sip:\(user)@\(environment.viaHost):\(environment.localPort(for: kind))\(transportParameter)"
    }

    /// Registers as `register.on_start` says once the sockets are bound; an instance without
    /// a `register:` section is ready at once.
    func start() {
        guard let settings = configuration.registration else { return context.metric(.gauge, "ready", 1) }
        binding.wanted = settings.onStart
        if settings.onStart {
            register()
        } else {
            context.log(.info, "not registering until a sip.Control {action: register} asks (register.on_start: false)")
            context.metric(.gauge, "ready", 1)
        }
    }

    /// Stops refreshing (shutdown); control actions waiting for the registrar are answered now,
    /// as no answer will come.
    func stop() {
        binding.timer?.cancel()
        let waiting = binding.waiting
        binding.waiting = []
        for delivery in waiting { environment.finish(delivery, .retry, reason: "sip instance stopped") }
    }

    /// Sends a REGISTER (refresh or first); the answer schedules the next one.
    func register(expires requested: Int? = nil) {
        guard let settings = configuration.registration, !environment.stopped, binding.wanted, !binding.inFlight else { return }
        binding.timer?.cancel()
        binding.inFlight = true
        let expires = requested ?? binding.expires ?? settings.expires
        binding.expires = expires
        // Retries after a failure stay `failed` until one succeeds: no state flapping.
        if binding.state == "unregistered" { setState("registering", reason: nil) }
        let target: SIPTarget
        do {
            target = try environment.target(for: settings.registrarURI)
        } catch {
            binding.inFlight = false
            return failed(error.message, retry: false)
        }
        advanceCSeq()
        var request = environment.newRequest(
            method: "REGISTER", uri: settings.registrarURI, to: configuration.identity.impu, callID: binding.callID,
            cseq: binding.cseq, fromTag: binding.fromTag)
        request.headers.append("Contact", "<\(contactURI)>")
        request.headers.append("Expires", String(expires))
        request.headers.append("Allow", "MESSAGE, OPTIONS")
        context.metric(.counter, "registrations_sent_total", 1)
        requests.request(request, to: target) { outcome in
            self.binding.inFlight = false
            self.binding.cseq = max(self.binding.cseq, Self.cseq(of: outcome))
            self.registered(outcome, requested: expires, target: target)
        }
    }

    /// The next REGISTER's CSeq. Near 2^31 (RFC 3261 §8.1.1.5; a challenge round adds one) the
    /// registration starts over with a new Call-ID, which the registrar takes as a replacement.
    private func advanceCSeq() {
        if binding.cseq >= SIPHeaders.maximumCSeq - 4 {
            context.log(.info, "the REGISTER CSeq reached \(binding.cseq); going on with a new Call-ID")
            binding.callID = SIPAgentEnvironment.randomToken(20) + "@switchyard"
            binding.cseq = 0
        }
        binding.cseq += 1
    }

    /// The CSeq of the response, which ``SIPClientTransactions`` matched to the request sent.
    private static func cseq(of outcome: SIPClientTransactions.Outcome) -> UInt32 {
        guard case .response(let response) = outcome else { return 0 }
        return response.headers.cseq?.number ?? 0
    }

    private func registered(_ outcome: SIPClientTransactions.Outcome, requested: Int, target: SIPTarget) {
        guard !environment.stopped else { return }
        switch outcome {
        case .response(let response) where (200..<300).contains(response.status ?? 0) && !binding.wanted:
            // Unregistered on request while this REGISTER was out: remove the binding it made.
            binding.state = "registered"
            _ = unregister()
        case .response(let response) where (200..<300).contains(response.status ?? 0):
            // Never later than asked: a refresh too early is harmless, one too late loses the binding.
            let granted = min(grantedExpiry(response) ?? requested, requested)
            binding.granted = granted
            binding.retryDelay = nil
            binding.tooBriefRounds = 0
            binding.connectionKey = target.transport.isReliable ? SIPTransport.key(target.transport, target.host, target.port) : nil
            let wasRegistered = binding.state == "registered"
            if !wasRegistered {
                context.log(.info, "registered \(configuration.identity.impu) at \(target) for \(granted) s (contact \(contactURI))")
            }
            setState("registered", reason: nil)
            // Refresh ahead of expiry: a minute early, or halfway for short bindings (granted is
            // 0...2^31-1, so neither overflows).
            let refresh = max(granted / 2, granted - 60)
            binding.timer = environment.eventLoop.scheduleTask(in: .seconds(Int64(max(refresh, 1)))) { self.register() }
        case .response(let response) where response.status == 423:
            // Interval Too Brief: the registrar says the shortest it takes.
            binding.tooBriefRounds += 1
            if let minimum = response.headers["Min-Expires"].flatMap(SIPDeltaSeconds.parse), minimum > requested,
                binding.tooBriefRounds <= 2
            {
                binding.expires = minimum
                register(expires: minimum)
            } else {
                failed("registrar answered 423 Interval Too Brief without a usable Min-Expires", retry: true)
            }
        case .response(let response):
            let status = response.status ?? 0
            let description = "\(status) \(SIPAgentEnvironment.reason(response))"
            if status == 401 || status == 403 || status == 407 {
                failed(
                    "registrar refused the credentials of \(configuration.identity.impi) (\(description)); "
                        + "check identity.password and identity.impi", retry: true)
            } else {
                failed("registrar answered \(description)", retry: true)
            }
        case .timedOut:
            failed("no answer from the registrar at \(target) (Timer F)", retry: true)
        case .transportFailed(let reason):
            failed(reason, retry: true)
        }
    }

    /// The expiry the registrar granted this Contact: its `expires` parameter, else `Expires`.
    private func grantedExpiry(_ response: SIPMessage) -> Int? {
        let own = contactURI.lowercased()
        for value in response.headers.values("Contact").flatMap(SIPHeaders.splitValues) {
            guard let address = SIPAddress(value), address.uri.lowercased() == own || own.hasPrefix(address.uri.lowercased()) else {
                continue
            }
            if let expires = address.parameters["expires"].flatMap(SIPDeltaSeconds.parse) { return expires }
        }
        return response.headers["Expires"].flatMap(SIPDeltaSeconds.parse)
    }

    private func failed(_ reason: String, retry: Bool) {
        context.metric(.counter, "registration_failures_total", 1)
        binding.tooBriefRounds = 0
        context.log(.error, "registration of \(configuration.identity.impu) failed: \(reason)")
        setState(binding.state == "registered" ? "unregistered" : "failed", reason: reason)
        guard retry, let settings = configuration.registration else { return }
        let delay = min((binding.retryDelay ?? settings.initialRetryDelay / 2) * 2, settings.maximumRetryDelay)
        binding.retryDelay = delay
        // ±20 % jitter, so many routers do not come back in step.
        let jittered = delay * Double.random(in: 0.8...1.2)
        context.log(.info, "registering again in \(Int(jittered / .milliseconds(1))) ms")
        binding.timer = environment.eventLoop.scheduleTask(in: TimeAmount(jittered)) { self.register() }
    }

    /// Records a state and tells the router (gauges, a `sip.Registration` envelope) when it changed.
    func setState(_ state: String, reason: String?) {
        let changed = state != binding.state
        binding.state = state
        context.metric(.gauge, "registered", state == "registered" ? 1 : 0)
        context.metric(.gauge, "ready", state == "registered" || !binding.wanted ? 1 : 0)
        if state == "registered" || state == "failed" || state == "unregistered" {
            let waiting = binding.waiting
            binding.waiting = []
            for delivery in waiting {
                environment.finish(delivery, state == "registered" ? .ok : .reject, reason: state == "registered" ? "" : reason ?? state)
            }
        }
        guard changed else { return }
        let envelope = SIPEnvelopes.registration(
            state: state, aor: configuration.identity.impu, contact: contactURI,
            expires: state == "registered" ? binding.granted : nil, reason: reason)
        context.emit(envelope, on: SIPPlugin.registrationPort)
    }

    /// A stream connection closed: if the binding rode on it, register again at once.
    func connectionClosed(_ key: String) {
        guard !environment.stopped, binding.connectionKey == key, binding.state == "registered" else { return }
        binding.connectionKey = nil
        context.log(.warning, "the connection to the registrar (\(key)) closed; registering again")
        setState("unregistered", reason: "connection to the registrar closed")
        register()
    }

    /// Removes the binding (Expires: 0) on shutdown; completes when the registrar answers or after 3 s.
    func unregister() -> EventLoopFuture<Void> {
        let eventLoop = environment.eventLoop
        guard let settings = configuration.registration, binding.state == "registered",
            let target = try? environment.target(for: settings.registrarURI)
        else { return eventLoop.makeSucceededVoidFuture() }
        binding.timer?.cancel()
        let promise = eventLoop.makePromise(of: Void.self)
        advanceCSeq()
        var request = environment.newRequest(
            method: "REGISTER", uri: settings.registrarURI, to: configuration.identity.impu, callID: binding.callID,
            cseq: binding.cseq, fromTag: binding.fromTag)
        request.headers.append("Contact", "<\(contactURI)>")
        request.headers.append("Expires", "0")
        requests.request(request, to: target) { outcome in
            if case .response(let response) = outcome, (200..<300).contains(response.status ?? 0) {
                self.context.log(.info, "unregistered \(self.configuration.identity.impu)")
                self.setState("unregistered", reason: "stopped")
            }
            promise.succeed()
        }
        eventLoop.scheduleTask(in: .seconds(3)) { promise.succeed() }
        return promise.futureResult
    }

    // MARK: sip.Control

    /// `sip.Control {action: register}` or `{action: refresh}`: acknowledged when the registrar
    /// answers (`ok` once registered, `reject` with its reason).
    func registerOnRequest(_ delivery: Delivery, refreshOnly: Bool) {
        if refreshOnly, !binding.wanted {
            return environment.finish(delivery, .reject, reason: "not registered: send {action: register} first")
        }
        binding.wanted = true
        binding.waiting.append(delivery)
        if binding.inFlight { return }
        register()
    }

    /// `sip.Control {action: unregister}`: acknowledged once the binding is removed.
    func unregisterOnRequest(_ delivery: Delivery) {
        binding.wanted = false
        binding.timer?.cancel()
        binding.retryDelay = nil
        let waiting = binding.waiting
        binding.waiting = []
        for earlier in waiting { environment.finish(earlier, .reject, reason: "unregistered before the registrar answered") }
        let wasRegistered = binding.state == "registered"
        unregister().whenComplete { _ in
            // The registrar removed the binding (or there was none): unregistered. Otherwise
            // it is still there until it expires: say so.
            if !wasRegistered || self.binding.state == "unregistered" {
                self.setState("unregistered", reason: "unregistered on request")
                self.environment.finish(delivery, .ok)
            } else {
                self.environment.finish(
                    delivery, .reject, reason: "the registrar did not confirm the removal; the binding lasts until it expires")
            }
        }
    }

    /// Why MESSAGEs cannot be sent now, or nil: an instance that registers only on request
    /// (`register.on_start: false`) and has not been asked yet has no binding to answer for.
    var sendRefusal: String? {
        guard environment.configuration.registration != nil, !binding.wanted, binding.state != "registered" else { return nil }
        return "not registered (register.on_start: false): deliver {action: register} to the control port first"
    }

    /// Starts the registration over for a new identity (reconfigure, after ``unregister()``):
    /// a new Call-ID, so a registrar does not take the new identity's REGISTER as a refresh of
    /// the old binding (RFC 3261 §10.2.4).
    func forgetBinding() {
        binding.timer?.cancel()
        binding = RegistrationState()
    }
}
