import Foundation

/// A PostgreSQL store's address: `postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=…`
/// (`postgresql://` too). `sslmode` means what it means to libpq: `disable`; `prefer` (the
/// default: TLS when the server offers it) and `require` (TLS or nothing), both without
/// checking the server's certificate; `verify-full`, TLS with the certificate checked against
/// the system's CAs and the host name.
public struct PostgresAddress: Sendable, Equatable {
    /// How the connection uses TLS.
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    public let host: String
    public let port: Int
    public let user: String
    public let password: String?
    public let database: String
    public let tls: TLSMode

    /// Parses `text`; throws with the reason (never repeating a password) when it is not a
    /// PostgreSQL URL this build can use.
    public init(parsing text: String) throws(StoreError) {
        let redacted = Self.redact(text)
        func refuse(_ reason: String) -> StoreError { StoreError(location: redacted, detail: reason) }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else { throw refuse("not a postgres:// URL (such as postgres://switchyard:${PASSWORD}@127.0.0.1:5432/switchyard)") }
        guard let host = components.host, !host.isEmpty else { throw refuse("the URL names no host") }
        guard let user = components.user, !user.isEmpty else { throw refuse("the URL names no user") }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else { throw refuse("the URL names no database (…/DATABASE)") }
        var tls = TLSMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(TLSMode.init(rawValue:)) else {
                    throw refuse("sslmode must be disable, prefer, require or verify-full")
                }
                tls = mode
            default:
                throw refuse("unknown URL parameter '\(item.name)' (expected: sslmode)")
            }
        }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw refuse("the port must be 1-65535") }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        self.user = user
        password = components.password
        self.database = database
        self.tls = tls
    }

    /// The URL without its password, for logs and errors.
    public var redacted: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(user)\(password == nil ? "" : ":***")@\(shownHost):\(port)/\(database)"
    }

    /// `text` with any password replaced by `***` (for a URL that could not be parsed).
    public static func redact(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@"), let scheme = text.range(of: "://"), scheme.upperBound < at else { return text }
        let credentials = text[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    /// Whether `text` is meant as a PostgreSQL URL rather than a file path.
    public static func isPostgresURL(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }
}
