import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// One sip instance's settings. The manifest's schema is derived from this type, by decoding
/// it: each section as written is a type of its own (``SIPIdentity``, ``SIPListenSection``,
/// ``SIPRegisterSection``…), which this one reads and turns into the settings the agent uses.
struct SIPConfiguration: PluginConfiguration {
    var identity: SIPIdentity
    var transport: SIPTransportKind
    var listenHost: String
    var listenPort: Int
    var tlsPort: Int?

    /// The TLS listener's port: `listen.tls_port`, else the one after the bound UDP/TCP port
    /// `bound` — unless that port was picked by the kernel (`listen.port: 0`), where the next
    /// may be taken: then the kernel picks this one too.
    func tlsListenPort(besides bound: Int) -> Int { tlsPort ?? (listenPort == 0 ? 0 : bound + 1) }
    /// The host written into Via and Contact (defaults to the listen host, or 127.0.0.1 for a wildcard listen).
    var advertisedHost: String
    /// Every request goes here first when set (RFC 3261 §8.1.2's outbound proxy).
    var outboundProxy: SIPTarget?
    var registration: SIPRegistrationSettings?
    /// TLS settings: a server certificate for the TLS listener, trust for outgoing connections.
    var tls: TLSSettings?
    var timers: SIPTimers
    /// Content types accepted for incoming MESSAGE (`type/subtype`, `type/*` or `*/*`).
    var accept: [String]
    /// 200, or 202 for a store-and-forward endpoint.
    var answerStatus: Int
    /// Default destination of the `send` port.
    var defaultTo: String?
    /// Whether an envelope may send a MESSAGE elsewhere than `send.to` (off: only where configured).
    var allowEnvelopeDestination: Bool
    var defaultContentType: String
    var maximumInFlight: Int
    var limits: SIPResourceLimits
    /// How long an answered MESSAGE is remembered to spot duplicates sent with a new branch.
    var duplicateWindow: Duration
    /// How long the router may take to settle an incoming MESSAGE before it is answered 503.
    var answerTimeout: Duration
    /// The message history's settings; nil when the instance keeps none (no `history:`).
    var history: SIPHistorySettings?

    static let descriptions = [
        "/identity/impu": "public identity, sip:alice@example.org",
        "/identity/impi": "private identity (digest user name), default the IMPU's user part",
        "/proxy": "outbound proxy, sip:host:port;transport=tcp",
        "/send/allow_envelope_destination": "let envelopes send elsewhere than send.to (default false)",
        "/history": "keep a message history in the router's store: true, or {keep, max_age, max_body}",
        "/history/keep": "entries kept (default 1000)",
        "/history/max_age": "entries older than this go (default 720h)",
        "/history/max_body": "bytes of each body kept (default 4096)",
    ]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let identity = try container.decode(SIPIdentity.self, forKey: .identity)
        self.identity = identity
        let transport = try container.decode(.transport, default: SIPTransportKind.udp)
        self.transport = transport
        let listen = try container.decodeSection(SIPListenSection.self, forKey: .listen)
        (listenHost, listenPort, tlsPort) = (listen.host, listen.port, listen.tlsPort)
        advertisedHost =
            listen.advertise ?? (["0.0.0.0", "::"].contains(listenHost) ? (listenHost == "::" ? "::1" : "127.0.0.1") : listenHost)
        outboundProxy = try container.decodeIfPresent(CheckedString<SIPTarget.URIRule>.self, forKey: .proxy).map {
            try SIPTarget(uri: $0.text, fallback: transport)
        }
        registration = try container.decode(.register, default: SIPRegisterSection.off).registration(
            domain: Self.domainPart(of: identity.impu))
        tls = try container.decodeIfPresent(TLSSettings.self, forKey: .tls)
        timers = try container.decodeSection(SIPTimersSection.self, forKey: .timers).timers
        let receive = try container.decodeSection(SIPReceiveSection.self, forKey: .receive)
        (accept, answerStatus) = (receive.accept.map { $0.lowercased() }, receive.answer.status)
        (duplicateWindow, answerTimeout) = (receive.duplicateWindow, receive.answerTimeout)
        let send = try container.decodeSection(SIPSendSection.self, forKey: .send)
        (defaultTo, allowEnvelopeDestination) = (send.to, send.allowEnvelopeDestination)
        (defaultContentType, maximumInFlight) = (send.contentType, send.maxInFlight)
        limits = try SIPResourceLimits(
            bodyBytes: container.decode(.maxBodyBytes, default: 65536, in: 1...SIPResourceLimits.maximumBytes),
            section: container.decodeSection(SIPResourceLimits.Section.self, forKey: .limits))
        history = try container.decode(.history, default: SIPHistorySection.off).settings
    }

    func validate() throws {
        if registration != nil, identity.password == nil {
            throw ConfigurationError(at: "/register", "register needs identity.password (use \"${SIP_PASSWORD}\")")
        }
        if transport == .tls || outboundProxy?.transport == .tls, tls == nil {
            throw ConfigurationError(at: "", "transport tls needs a tls: section (at least ca_file, or verify: false)")
        }
        guard timers.t1 > .zero, timers.t2 >= timers.t1 else {
            throw ConfigurationError(at: "/timers", "t1 must be positive and t2 at least t1")
        }
    }

    private enum CodingKeys: CodingKey {
        case identity, transport, listen, proxy, register, tls, timers, receive, send, maxBodyBytes, limits, history
    }

    /// `alice` of `sip:alice@example.org`.
    static func userPart(of uri: String) -> String {
        let afterScheme = uri.drop { $0 != ":" }.dropFirst()
        return String(afterScheme.prefix { $0 != "@" })
    }

    /// `example.org` of `sip:alice@example.org:5060;transport=tcp`.
    static func domainPart(of uri: String) -> String {
        let afterAt = uri.drop { $0 != "@" }.dropFirst()
        return String(afterAt.prefix { $0 != ":" && $0 != ";" && $0 != ">" })
    }
}
