public import SwitchyardCore

/// `listen:`, `HOST:PORT` (`[::1]:8080`); port 0 picks a free one.
public struct HostPort: ConfigurationValue, Sendable {
    /// The host name or address, without brackets.
    public var host: String
    /// The port; 0 picks a free one.
    public var port: Int

    /// Decodes `HOST:PORT`.
    public init(from decoder: any Decoder) throws {
        let listen = try decoder.singleValueContainer().decode(String.self)
        let host: Substring
        let port: Substring
        if listen.hasPrefix("["), let close = listen.firstIndex(of: "]") {
            host = listen[listen.index(after: listen.startIndex)..<close]
            port = listen[listen.index(after: close)...].dropFirst()
        } else if let colon = listen.lastIndex(of: ":") {
            host = listen[..<colon]
            port = listen[listen.index(after: colon)...]
        } else {
            throw ConfigurationError(decoder, "'\(listen)' is not HOST:PORT")
        }
        guard !host.isEmpty, let number = Int(port), (0...65535).contains(number) else {
            throw ConfigurationError(decoder, "'\(listen)' is not HOST:PORT (port 0 picks a free one)")
        }
        (self.host, self.port) = (String(host), number)
    }

    /// An address as given.
    public init(host: String, port: Int) { (self.host, self.port) = (host, port) }

    /// A string.
    public static let configurationSchema: JSONValue = ["type": "string"]
    /// `127.0.0.1:0`.
    public static var schemaPlaceholder: Self { Self(host: "127.0.0.1", port: 0) }
}
