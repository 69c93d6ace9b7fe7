import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// A SIP transport.
enum SIPTransportKind: String, Sendable, CaseIterable {
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

/// One sip instance's settings.
struct SIPConfiguration: Sendable {
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
    }

    /// TLS settings: a server certificate for the TLS listener, trust for outgoing connections.
    var identity: Identity
    var transport: SIPTransportKind
    var listenHost: String
    var listenPort: Int
    var tlsPort: Int?
    /// The host written into Via and Contact (defaults to the listen host, or 127.0.0.1 for a wildcard listen).
    var advertisedHost: String
    /// Every request goes here first when set (RFC 3261 §8.1.2's outbound proxy).
    var outboundProxy: SIPTarget?
    var registration: Registration?
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

    init(config: JSONValue) throws {
        guard let impu = config["identity"]?["impu"]?.stringValue ?? config["impu"]?.stringValue else {
            throw PluginError("identity.impu (the public identity, like sip:alice@example.org) is required")
        }
        guard impu.lowercased().hasPrefix("sip:") || impu.lowercased().hasPrefix("sips:"), impu.contains("@") else {
            throw PluginError("identity.impu '\(impu)' is not a SIP address like sip:alice@example.org")
        }
        let user = Self.userPart(of: impu)
        let domain = Self.domainPart(of: impu)
        let identityConfig = config["identity"]
        identity = Identity(
            impu: impu,
            impi: identityConfig?["impi"]?.stringValue ?? user,
            realm: identityConfig?["realm"]?.stringValue,
            password: identityConfig?["password"]?.stringValue,
            displayName: identityConfig?["display_name"]?.stringValue)

        let transportName = config["transport"]?.stringValue ?? "udp"
        guard let transport = SIPTransportKind(rawValue: transportName.lowercased()) else {
            throw PluginError("transport '\(transportName)' is not udp, tcp or tls")
        }
        self.transport = transport
        var listen = config["listen"]
        // `listen: "127.0.0.1:5070"` is short for `{ host: 127.0.0.1, port: 5070 }`.
        if let text = listen?.stringValue {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else {
                throw PluginError("listen '\(text)' is not host:port")
            }
            let host = String(text[..<colon]).trimmingCharacters(in: "[").trimmingCharacters(in: "]")
            listen = ["host": .string(host), "port": .int(port)]
        }
        listenHost = listen?["host"]?.stringValue ?? "0.0.0.0"
        listenPort = listen?["port"]?.intValue ?? 5060
        tlsPort = listen?["tls_port"]?.intValue
        guard (0...65535).contains(listenPort) else { throw PluginError("listen.port \(listenPort) is not in 0-65535") }
        if let tlsPort, !(0...65535).contains(tlsPort) { throw PluginError("listen.tls_port \(tlsPort) is not in 0-65535") }
        advertisedHost =
            listen?["advertise"]?.stringValue
            ?? (["0.0.0.0", "::"].contains(listenHost) ? (listenHost == "::" ? "::1" : "127.0.0.1") : listenHost)

        if let proxy = config["proxy"]?.stringValue {
            outboundProxy = try SIPTarget(uri: proxy, fallback: transport)
        }
        if let register = config["register"], register != .bool(false) {
            let registrar = register["registrar"]?.stringValue ?? "sip:\(domain)"
            registration = Registration(
                registrarURI: registrar,
                expires: register["expires"]?.intValue ?? 600,
                initialRetryDelay: try PluginError.duration(
                    register["retry"]?["initial_delay"], "register.retry.initial_delay", default: .seconds(1)),
                maximumRetryDelay: try PluginError.duration(
                    register["retry"]?["max_delay"], "register.retry.max_delay", default: .seconds(60)))
            if let expires = registration?.expires, expires < 10 {
                throw PluginError("register.expires \(expires) is too short: registrars refuse under 10 s, most under 60 s")
            }
            if let expires = registration?.expires, expires > SIPDeltaSeconds.maximum {
                throw PluginError("register.expires \(expires) is over \(SIPDeltaSeconds.maximum) s (2^31-1)")
            }
            if identity.password == nil { throw PluginError("register needs identity.password (use \"${SIP_PASSWORD}\")") }
        }
        if let tls = config["tls"] {
            self.tls = try TLSSettings(tls)
        }
        if transport == .tls || outboundProxy?.transport == .tls, tls == nil {
            throw PluginError("transport tls needs a tls: section (at least ca_file, or verify: false)")
        }

        let timerConfig = config["timers"]
        timers = SIPTimers(
            t1: try PluginError.duration(timerConfig?["t1"], "timers.t1", default: .milliseconds(500)),
            t2: try PluginError.duration(timerConfig?["t2"], "timers.t2", default: .seconds(4)),
            t4: try PluginError.duration(timerConfig?["t4"], "timers.t4", default: .seconds(5)))
        guard timers.t1 > .zero, timers.t2 >= timers.t1 else { throw PluginError("timers: t1 must be positive and t2 at least t1") }

        let receive = config["receive"]
        accept = receive?["accept"]?.arrayValue?.compactMap(\.stringValue).map { $0.lowercased() } ?? ["text/plain", "application/json"]
        switch receive?["answer"]?.intValue ?? 200 {
        case 200: answerStatus = 200
        case 202: answerStatus = 202
        case let other: throw PluginError("receive.answer \(other) is neither 200 nor 202 (store-and-forward)")
        }
        duplicateWindow = try PluginError.duration(receive?["duplicate_window"], "receive.duplicate_window", default: .seconds(32))
        answerTimeout = try PluginError.duration(receive?["answer_timeout"], "receive.answer_timeout", default: .seconds(8))

        let send = config["send"]
        defaultTo = send?["to"]?.stringValue
        allowEnvelopeDestination = send?["allow_envelope_destination"]?.boolValue ?? false
        defaultContentType = send?["content_type"]?.stringValue ?? "text/plain"
        maximumInFlight = send?["max_in_flight"]?.intValue ?? 256
        guard maximumInFlight >= 1 else { throw PluginError("send.max_in_flight must be at least 1") }
        limits = try SIPResourceLimits(config: config)
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
