import Foundation

/// A table (or a few) of the store, asked on the store's one session: each keeps no state of
/// its own beyond that, so the store can hand every table the same session.
protocol PostgresTable {
    /// The connection the table's statements go through.
    var session: PostgresSession { get }
}

extension PostgresTable {
    /// `string` as a TEXT value: PostgreSQL refuses NUL in text, which a plugin's error or an
    /// envelope's subject may carry; it becomes U+FFFD rather than failing the whole write.
    static func text(_ string: String) -> String {
        string.utf8.contains(0) ? string.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : string
    }

    static func text(_ string: String?) -> String? { string.map { text($0) } }
}
