internal import CSQLite
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An error SQLite reported, with the statement or action it was about.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// SQLite's result code.
    public var code: Int32
    /// SQLite's message and what was being done.
    public var description: String

    /// An error with SQLite's result `code` and what was being done.
    package init(code: Int32, description: String) {
        self.code = code
        self.description = description
    }
}

/// One SQLite connection. Not thread-safe: the owner serialises access, which is why it is
/// not `Sendable`.
public final class SQLiteDatabase {
    private var handle: OpaquePointer?
    /// The database file.
    public let path: String

    /// Opens (creating if needed) the database at `path`. A database this creates is readable
    /// by its owner only (0600, and so are its `-wal` and `-shm` files, which SQLite creates
    /// with the database's mode), in a folder created 0700.
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        self.path = path
        if !readOnly { try Self.createOwnerOnly(path) }
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let status = sqlite3_open_v2(path, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            handle = nil
            throw SQLiteError(code: status, description: "cannot open '\(path)': \(message)")
        }
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Creates the missing folders of `path` (0700) and the file itself (0600), so SQLite
    /// never creates a world-readable database under the process's umask.
    private static func createOwnerOnly(_ path: String) throws(SQLiteError) {
        var folders: [String] = []
        var folder = (path as NSString).deletingLastPathComponent
        while !folder.isEmpty, folder != "/", access(folder, F_OK) != 0 {
            folders.append(folder)
            folder = (folder as NSString).deletingLastPathComponent
        }
        for missing in folders.reversed() where mkdir(missing, 0o700) != 0 && errno != EEXIST {
            throw SQLiteError(code: SQLITE_CANTOPEN, description: "cannot create folder '\(missing)': \(String(cString: strerror(errno)))")
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
        } else if errno != EEXIST {
            throw SQLiteError(code: SQLITE_CANTOPEN, description: "cannot create '\(path)': \(String(cString: strerror(errno)))")
        }
    }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        guard status == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(message)
            throw SQLiteError(code: status, description: "\(text) (in: \(sql.prefix(80)))")
        }
    }

    /// Compiles a statement.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else {
            throw SQLiteError(code: status, description: "\(lastMessage) (in: \(sql.prefix(80)))")
        }
        return SQLiteStatement(statement, database: self)
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    public func transaction<Result>(_ body: () throws(SQLiteError) -> Result) throws(SQLiteError) -> Result {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the last insert.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// SQLite's message for the last failed call.
    public var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }
}

/// A compiled statement, reset before each use.
public final class SQLiteStatement {
    private let statement: OpaquePointer
    private unowned let database: SQLiteDatabase

    init(_ statement: OpaquePointer, database: SQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit { sqlite3_finalize(statement) }

    /// A value to bind.
    public enum Value {
        /// An integer.
        case int(Int64)
        /// UTF-8 text.
        case text(String)
        /// Bytes.
        case blob([UInt8])
        /// NULL.
        case null
    }

    /// Resets the statement and binds `values` to its parameters in order.
    @discardableResult
    public func bind(_ values: [Value]) -> SQLiteStatement {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .int(let number): sqlite3_bind_int64(statement, index, number)
            case .text(let text): sqlite3_bind_text(statement, index, text, -1, csqlite_transient())
            case .blob(let bytes):
                bytes.withUnsafeBytes { raw in
                    _ = sqlite3_bind_blob64(statement, index, raw.baseAddress, sqlite3_uint64(raw.count), csqlite_transient())
                }
            case .null: sqlite3_bind_null(statement, index)
            }
        }
        return self
    }

    /// Steps once: `true` with a row to read, `false` when done.
    public func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let status: throw SQLiteError(code: status, description: database.lastMessage)
        }
    }

    /// Runs a statement that returns no rows.
    public func run(_ values: [Value]) throws(SQLiteError) {
        bind(values)
        while try step() {}
    }

    /// Every row, each read by `row`.
    public func rows<Row>(_ values: [Value], _ row: (SQLiteStatement) -> Row) throws(SQLiteError) -> [Row] {
        bind(values)
        var result: [Row] = []
        while try step() { result.append(row(self)) }
        return result
    }

    /// Column `column` of the current row as an integer.
    public func int(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    /// Column `column` of the current row as text (`""` for NULL).
    public func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: pointer)
    }

    /// Whether column `column` of the current row is NULL.
    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    /// Column `column` of the current row as bytes.
    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
