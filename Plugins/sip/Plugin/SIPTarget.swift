import SwitchyardCore
import SwitchyardPluginKit

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

    /// A SIP URI naming where to send (`sip:proxy.example.org;transport=tcp`).
    enum URIRule: ConfigurationStringRule {
        static let placeholder = "sip:example.org"

        static func checked(_ text: String) throws(PluginError) -> String {
            _ = try SIPTarget(uri: text, fallback: .udp)
            return text
        }
    }
}
