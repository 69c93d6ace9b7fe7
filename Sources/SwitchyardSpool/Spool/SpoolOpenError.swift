import SwitchyardSQLite

/// Why a spool could not be opened, worded for the operator who has to act on it.
public enum SpoolOpenError: Error, Sendable, CustomStringConvertible {
    /// Another process (a second router) holds the spool.
    case claimed(path: String, holder: String)
    /// The file is not a sound SQLite database: it is left as it is.
    case damaged(path: String, detail: String)
    /// Anything else SQLite or the file system said.
    case failed(path: String, detail: String)

    static func from(_ error: any Error, path: String) -> SpoolOpenError {
        if let error = error as? SpoolOpenError { return error }
        guard let error = error as? SQLiteError else { return .failed(path: path, detail: "\(error)") }
        // SQLITE_CORRUPT and SQLITE_NOTADB, with or without an extended code.
        if [11, 26].contains(error.code & 0xFF) { return .damaged(path: path, detail: error.description) }
        return .failed(path: path, detail: error.description)
    }

    public var description: String {
        switch self {
        case .claimed(let path, let holder):
            return
                "spool '\(path)' is in use by another router (\(holder)); two routers on one spool would deliver the same envelopes twice"
        case .damaged(let path, let detail):
            return
                "spool '\(path)' is damaged (\(detail)); it was left untouched. Run 'switchyard spool recover \(path)' to move it aside "
                + "(its envelopes stay readable there) and start with an empty spool"
        case .failed(let path, let detail):
            return "spool '\(path)': \(detail)"
        }
    }
}
