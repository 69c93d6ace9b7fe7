/// A `Via` header value (RFC 3261 §20.42, RFC 3581 for `rport`).
public struct SIPVia: Sendable, Equatable {
    /// `UDP`, `TCP` or `TLS`.
    public var transport: String
    /// The sent-by host.
    public var host: String
    /// The sent-by port, if given.
    public var port: Int?
    /// `branch`, `rport`, `received`…
    public var parameters: SIPParameters

    /// Creates a Via.
    public init(transport: String, host: String, port: Int?, parameters: SIPParameters = SIPParameters()) {
        self.transport = transport
        self.host = host
        self.port = port
        self.parameters = parameters
    }

    /// Parses one Via value (`SIP/2.0/UDP host:port;branch=…;rport`).
    public init?(_ text: String) {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false).map { String($0).trimmingWhitespace() }
        guard let sentBy = parts.first else { return nil }
        let protocolAndHost = sentBy.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard protocolAndHost.count == 2 else { return nil }
        let protocolParts = protocolAndHost[0].split(separator: "/")
        guard protocolParts.count == 3, protocolParts[0].uppercased() == "SIP", protocolParts[1] == "2.0" else { return nil }
        transport = protocolParts[2].uppercased()
        let hostPort = String(protocolAndHost[1])
        if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") {
            host = String(hostPort[...close])
            let rest = hostPort[hostPort.index(after: close)...]
            port = rest.hasPrefix(":") ? Int(rest.dropFirst()) : nil
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = String(hostPort[..<colon])
            port = Int(hostPort[hostPort.index(after: colon)...])
            if port == nil { return nil }
        } else {
            host = hostPort
            port = nil
        }
        guard !host.isEmpty else { return nil }
        parameters = SIPParameters(parsing: parts.dropFirst().joined(separator: ";"))
    }

    /// The branch, which identifies the transaction when it has the RFC 3261 magic cookie.
    public var branch: String? { parameters["branch"] }

    /// The header value.
    public var text: String {
        "SIP/2.0/\(transport) \(host)" + (port.map { ":\($0)" } ?? "") + parameters.text
    }

}
