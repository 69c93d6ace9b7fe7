import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// A SIP transport.
enum SIPTransportKind: String, Sendable, CaseIterable, ConfigurationEnum {
    case udp, tcp, tls

    /// The Via transport token.
    var viaName: String { rawValue.uppercased() }
    /// Whether the transport delivers reliably (no retransmission timers, RFC 3261 §17).
    var isReliable: Bool { self != .udp }
    /// The default port of the transport (5060, or 5061 for TLS).
    var defaultPort: Int { self == .tls ? 5061 : 5060 }
}

/// Where requests go: a host, a port and a transport.
struct SIPTarget: Sendable, Hashable, CustomStringConvertible {
    var host: String
    var port: Int
    var transport: SIPTransportKind

    /// The target of a SIP URI (`sip:host[:port][;transport=tcp]`, `sips:` for TLS).
    init(uri: String, fallback: SIPTransportKind) throws(PluginError) {
        var rest = Substring(uri)
        var transport = fallback
        if rest.lowercased().hasPrefix("sips:") {
            transport = .tls
            rest = rest.dropFirst(5)
        } else if rest.lowercased().hasPrefix("sip:") {
            rest = rest.dropFirst(4)
        } else {
            throw PluginError("'\(uri)' is not a sip: or sips: URI")
        }
        if rest.hasPrefix("<") { rest = rest.dropFirst() }
        rest = rest.prefix { $0 != ">" && $0 != "?" }
        let parts = rest.split(separator: ";", omittingEmptySubsequences: false)
        var hostPort = parts.first ?? ""
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            if pair.first?.lowercased() == "transport", let value = pair.last, let kind = SIPTransportKind(rawValue: value.lowercased()) {
                transport = kind
            }
        }
        if let at = hostPort.lastIndex(of: "@") { hostPort = hostPort[hostPort.index(after: at)...] }
        let host: Substring
        var port: Int?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw PluginError("'\(uri)': unclosed IPv6 reference") }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { port = Int(after.dropFirst()) ?? -1 }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            port = Int(hostPort[hostPort.index(after: colon)...]) ?? -1
        } else {
            host = hostPort
        }
        guard !host.isEmpty else { throw PluginError("'\(uri)' names no host") }
        if let port, !(1...65535).contains(port) { throw PluginError("'\(uri)': the port is not a number in 1-65535") }
        self.host = String(host)
        self.port = port ?? transport.defaultPort
        self.transport = transport
    }

    init(host: String, port: Int, transport: SIPTransportKind) {
        self.host = host
        self.port = port
        self.transport = transport
    }

    var description: String { "\(transport.rawValue):\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}

/// One sip instance's settings. The manifest's schema is derived from this type; the sections
/// are read in SIPConfiguration+Sections.swift.
struct SIPConfiguration: PluginConfiguration {
    /// Who the instance is (the IMS names iDoubs uses: IMPI for authentication, IMPU as address).
    struct Identity: Sendable {
        /// The public identity, the address of record: `sip:alice@example.org`.
        var impu: String
        /// The private identity: the digest user name (defaults to the IMPU's user part).
        var impi: String
        /// The only digest realm answered, when set; without it any realm of the registrar or
        /// outbound proxy is.
        var realm: String?
        var password: String?
        var displayName: String?
    }

    /// Registration with a registrar.
    struct Registration: Sendable {
        /// The Request-URI of REGISTER (`sip:example.org`).
        var registrarURI: String
        var expires: Int
        var initialRetryDelay: Duration
        var maximumRetryDelay: Duration
        /// Registers when the instance starts (`register.on_start`, default true); otherwise a
        /// `sip.Control {action: register}` does.
        var onStart = true
    }

    var identity: Identity
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
    var registration: Registration?
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
        let identity = try container.decode(IdentitySection.self, forKey: .identity)
        self.identity = identity.identity
        let transport = try container.decode(.transport, default: SIPTransportKind.udp)
        self.transport = transport
        let listen = try container.decodeSection(ListenSection.self, forKey: .listen)
        (listenHost, listenPort, tlsPort) = (listen.host, listen.port, listen.tlsPort)
        advertisedHost =
            listen.advertise ?? (["0.0.0.0", "::"].contains(listenHost) ? (listenHost == "::" ? "::1" : "127.0.0.1") : listenHost)
        outboundProxy = try container.decodeIfPresent(CheckedString<SIPURIRule>.self, forKey: .proxy).map {
            try SIPTarget(uri: $0.text, fallback: transport)
        }
        registration = try container.decode(.register, default: RegisterSection.off).registration(
            domain: Self.domainPart(of: identity.identity.impu))
        tls = try container.decodeIfPresent(TLSSettings.self, forKey: .tls)
        timers = try container.decodeSection(TimersSection.self, forKey: .timers).timers
        let receive = try container.decodeSection(ReceiveSection.self, forKey: .receive)
        (accept, answerStatus) = (receive.accept.map { $0.lowercased() }, receive.answer.status)
        (duplicateWindow, answerTimeout) = (receive.duplicateWindow, receive.answerTimeout)
        let send = try container.decodeSection(SendSection.self, forKey: .send)
        (defaultTo, allowEnvelopeDestination) = (send.to, send.allowEnvelopeDestination)
        (defaultContentType, maximumInFlight) = (send.contentType, send.maxInFlight)
        limits = try SIPResourceLimits(
            bodyBytes: container.decode(.maxBodyBytes, default: 65536, in: 1...SIPResourceLimits.maximumBytes),
            section: container.decodeSection(SIPResourceLimits.Section.self, forKey: .limits))
        history = try container.decode(.history, default: HistorySection.off).settings
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
