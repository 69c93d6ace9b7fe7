import NIOCore
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// Where the registration binding is.
struct RegistrationState {
    /// One Call-ID and a rising CSeq for every REGISTER of this instance (RFC 3261 §10.2).
    var callID = SIPAgent.randomToken(20) + "@switchyard"
    var cseq: UInt32 = 0
    var fromTag = SIPAgent.randomToken(10)
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

extension SIPAgent {
    /// The Contact of this instance: where the registrar sends requests for the IMPU.
    var contactURI: String {
        let user = SIPConfiguration.userPart(of: configuration.identity.impu)
        let kind = configuration.outboundProxy?.transport ?? configuration.transport
        let transportParameter = kind == .udp ? "" : ";transport=\(kind.rawValue)"
        return "sip:\(user)@\(viaHost):\(localPort(for: kind))\(transportParameter)"
    }

    /// Sends a REGISTER (refresh or first); the answer schedules the next one.
    func register(expires requested: Int? = nil) {
        guard let settings = configuration.registration, !stopped, registration.wanted, !registration.inFlight else { return }
        registration.timer?.cancel()
        registration.inFlight = true
        let expires = requested ?? registration.expires ?? settings.expires
        registration.expires = expires
        // Retries after a failure stay `failed` until one succeeds: no state flapping.
        if registration.state == "unregistered" { setRegistration("registering", reason: nil) }
        let target: SIPTarget
        do {
            target = try self.target(for: settings.registrarURI)
        } catch {
            registration.inFlight = false
            return registrationFailed(error.message, retry: false)
        }
        advanceRegistrationCSeq()
        var request = newRequest(
            method: "REGISTER", uri: settings.registrarURI, to: configuration.identity.impu, callID: registration.callID,
            cseq: registration.cseq, fromTag: registration.fromTag)
        request.headers.append("Contact", "<\(contactURI)>")
        request.headers.append("Expires", String(expires))
        request.headers.append("Allow", "MESSAGE, OPTIONS")
        context.metric(.counter, "registrations_sent_total", 1)
        self.request(request, to: target) { outcome in
            self.registration.inFlight = false
            self.registration.cseq = max(self.registration.cseq, self.registrationCSeq(outcome))
            self.registered(outcome, requested: expires, target: target)
        }
    }

    /// The next REGISTER's CSeq. Near 2^31 (RFC 3261 §8.1.1.5; a challenge round adds one) the
    /// registration starts over with a new Call-ID, which the registrar takes as a replacement.
    private func advanceRegistrationCSeq() {
        if registration.cseq >= SIPHeaders.maximumCSeq - 4 {
            context.log(.info, "the REGISTER CSeq reached \(registration.cseq); going on with a new Call-ID")
            registration.callID = Self.randomToken(20) + "@switchyard"
            registration.cseq = 0
        }
        registration.cseq += 1
    }

    /// The CSeq of the response, which ``SIPAgent`` matched to the request sent.
    private func registrationCSeq(_ outcome: RequestOutcome) -> UInt32 {
        guard case .response(let response) = outcome else { return 0 }
        return response.headers.cseq?.number ?? 0
    }

    private func registered(_ outcome: RequestOutcome, requested: Int, target: SIPTarget) {
        guard !stopped else { return }
        switch outcome {
        case .response(let response) where (200..<300).contains(response.status ?? 0) && !registration.wanted:
            // Unregistered on request while this REGISTER was out: remove the binding it made.
            registration.state = "registered"
            _ = unregister()
        case .response(let response) where (200..<300).contains(response.status ?? 0):
            // Never later than asked: a refresh too early is harmless, one too late loses the binding.
            let granted = min(grantedExpiry(response) ?? requested, requested)
            registration.granted = granted
            registration.retryDelay = nil
            registration.tooBriefRounds = 0
            registration.connectionKey = target.transport.isReliable ? SIPTransport.key(target.transport, target.host, target.port) : nil
            let wasRegistered = registration.state == "registered"
            if !wasRegistered {
                context.log(.info, "registered \(configuration.identity.impu) at \(target) for \(granted) s (contact \(contactURI))")
            }
            setRegistration("registered", reason: nil)
            // Refresh ahead of expiry: a minute early, or halfway for short bindings (granted is
            // 0...2^31-1, so neither overflows).
            let refresh = max(granted / 2, granted - 60)
            registration.timer = eventLoop.scheduleTask(in: .seconds(Int64(max(refresh, 1)))) { self.register() }
        case .response(let response) where response.status == 423:
            // Interval Too Brief: the registrar says the shortest it takes.
            registration.tooBriefRounds += 1
            if let minimum = response.headers["Min-Expires"].flatMap(SIPDeltaSeconds.parse), minimum > requested,
                registration.tooBriefRounds <= 2
            {
                registration.expires = minimum
                register(expires: minimum)
            } else {
                registrationFailed("registrar answered 423 Interval Too Brief without a usable Min-Expires", retry: true)
            }
        case .response(let response):
            let status = response.status ?? 0
            let description = "\(status) \(Self.reason(response))"
            if status == 401 || status == 403 || status == 407 {
                registrationFailed(
                    "registrar refused the credentials of \(configuration.identity.impi) (\(description)); check identity.password and identity.impi",
                    retry: true)
            } else {
                registrationFailed("registrar answered \(description)", retry: true)
            }
        case .timedOut:
            registrationFailed("no answer from the registrar at \(target) (Timer F)", retry: true)
        case .transportFailed(let reason):
            registrationFailed(reason, retry: true)
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

    private func registrationFailed(_ reason: String, retry: Bool) {
        context.metric(.counter, "registration_failures_total", 1)
        registration.tooBriefRounds = 0
        context.log(.error, "registration of \(configuration.identity.impu) failed: \(reason)")
        setRegistration(registration.state == "registered" ? "unregistered" : "failed", reason: reason)
        guard retry, let settings = configuration.registration else { return }
        let delay = min((registration.retryDelay ?? settings.initialRetryDelay / 2) * 2, settings.maximumRetryDelay)
        registration.retryDelay = delay
        // ±20 % jitter, so many routers do not come back in step.
        let jittered = delay * Double.random(in: 0.8...1.2)
        context.log(.info, "registering again in \(Int(jittered / .milliseconds(1))) ms")
        registration.timer = eventLoop.scheduleTask(in: TimeAmount(jittered)) { self.register() }
    }

    /// Records a state and tells the router (gauges, a `sip.Registration` envelope) when it changed.
    func setRegistration(_ state: String, reason: String?) {
        let changed = state != registration.state
        registration.state = state
        context.metric(.gauge, "registered", state == "registered" ? 1 : 0)
        context.metric(.gauge, "ready", state == "registered" || !registration.wanted ? 1 : 0)
        if state == "registered" || state == "failed" || state == "unregistered" {
            let waiting = registration.waiting
            registration.waiting = []
            for delivery in waiting {
                finish(delivery, state == "registered" ? .ok : .reject, reason: state == "registered" ? "" : reason ?? state)
            }
        }
        guard changed else { return }
        let envelope = SIPEnvelopes.registration(
            state: state, aor: configuration.identity.impu, contact: contactURI,
            expires: state == "registered" ? registration.granted : nil, reason: reason)
        context.emit(envelope, on: SIPPlugin.registrationPort)
    }

    /// A stream connection closed: if the binding rode on it, register again at once.
    func connectionClosed(_ key: String) {
        guard !stopped, registration.connectionKey == key, registration.state == "registered" else { return }
        registration.connectionKey = nil
        context.log(.warning, "the connection to the registrar (\(key)) closed; registering again")
        setRegistration("unregistered", reason: "connection to the registrar closed")
        register()
    }

    /// Removes the binding (Expires: 0) on shutdown; completes when the registrar answers or after 3 s.
    func unregister() -> EventLoopFuture<Void> {
        guard let settings = configuration.registration, registration.state == "registered",
            let target = try? target(for: settings.registrarURI)
        else { return eventLoop.makeSucceededVoidFuture() }
        registration.timer?.cancel()
        let promise = eventLoop.makePromise(of: Void.self)
        advanceRegistrationCSeq()
        var request = newRequest(
            method: "REGISTER", uri: settings.registrarURI, to: configuration.identity.impu, callID: registration.callID,
            cseq: registration.cseq, fromTag: registration.fromTag)
        request.headers.append("Contact", "<\(contactURI)>")
        request.headers.append("Expires", "0")
        self.request(request, to: target) { outcome in
            if case .response(let response) = outcome, (200..<300).contains(response.status ?? 0) {
                self.context.log(.info, "unregistered \(self.configuration.identity.impu)")
                self.setRegistration("unregistered", reason: "stopped")
            }
            promise.succeed()
        }
        eventLoop.scheduleTask(in: .seconds(3)) { promise.succeed() }
        return promise.futureResult
    }

    /// The reason phrase of a response.
    static func reason(_ response: SIPMessage) -> String {
        if case .response(_, let reason) = response.startLine { return reason }
        return ""
    }
}

extension String {
    /// The string without leading and trailing `character`s.
    func trimmingCharacters(in character: Character) -> String {
        String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
    }
}
