import NIOCore
import SIPCodec
import SwitchyardPluginKit

/// Sends requests through ``SIPClientTransactions`` and answers their 401/407 challenges with
/// the identity's credentials (digest, RFC 3261 §22); owns the cache of challenges answered.
///
/// Separate from the transaction layer, which knows nothing of credentials, and from the
/// registration and messaging, which both send through it. Confined to the agent's event loop
/// (a `NIOLoopBoundBox`, checked at each access).
final class SIPDigestClient: Sendable {
    /// A digest challenge this agent answers, and how often its nonce has been used.
    struct CachedChallenge {
        var challenge: SIPDigest.Challenge
        var count: UInt32
    }

    /// How many far ends' challenges are kept; past it the cache starts again.
    static let maximumCachedChallenges = 64

    private let environment: SIPAgentEnvironment
    private let clients: SIPClientTransactions
    private let _challenges: NIOLoopBoundBox<[String: CachedChallenge]>

    init(environment: SIPAgentEnvironment, clients: SIPClientTransactions) {
        self.environment = environment
        self.clients = clients
        _challenges = .makeBoxSendingValue([:], as: [String: CachedChallenge].self, eventLoop: environment.eventLoop)
    }

    /// The last challenges (by ``challengeKey(_:_:)``): answered up front on later requests,
    /// saving the 401/407 round trip while the nonce lasts.
    var challenges: [String: CachedChallenge] {
        get { _challenges.value }
        _modify { yield &_challenges.value }
    }

    private var configuration: SIPConfiguration { environment.configuration }

    /// Sends a request and answers 401/407 challenges with the identity's credentials (MD5 or
    /// SHA-256, the strongest offered; qop=auth). A challenge to credentials just given, not
    /// marked stale, is the final answer: the credentials are wrong.
    func request(
        _ request: SIPMessage, to target: SIPTarget, authenticationRounds: Int = 0,
        completion: @escaping (SIPClientTransactions.Outcome) -> Void
    ) {
        var request = request
        let authorized = isCredentialTarget(target) ? authorize(&request) : [:]
        clients.send(request, to: target) { outcome in
            guard case .response(let response) = outcome, response.status == 401 || response.status == 407,
                self.configuration.identity.password != nil, authenticationRounds < 2
            else { return completion(outcome) }
            let proxy = response.status == 407
            let header = proxy ? "Proxy-Authorization" : "Authorization"
            let offered = response.headers.values(proxy ? "Proxy-Authenticate" : "WWW-Authenticate")
            guard let challenge = SIPDigest.Challenge.strongest(in: offered) else { return completion(outcome) }
            if let refusal = self.refusal(of: challenge, status: response.status ?? 0, from: target) {
                self.environment.context.metric(.counter, "challenges_refused_total", 1)
                self.environment.context.log(.warning, refusal)
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
        let trusted = [
            configuration.outboundProxy, configuration.registration.flatMap { try? self.environment.target(for: $0.registrarURI) },
        ]
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
                cnonce: SIPAgentEnvironment.randomToken(16), nc: cached.count)
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
}
