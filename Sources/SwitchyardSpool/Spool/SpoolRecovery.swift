import Foundation
import SwitchyardSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// Checks a spool file's integrity and moves a damaged one aside. Apart from ``Spool`` because
/// it works on a path, not on an open spool: `switchyard spool recover` runs it on a file no
/// router may have open, and a router runs the check before it writes to its file at all.
enum SpoolRecovery {
    /// Refuses to open the spool at `path` when `database` (just opened there) is damaged.
    static func checkIntegrity(of database: SQLiteDatabase, path: String) throws {
        guard let problems = try integrityProblems(of: database) else { return }
        throw SpoolOpenError.damaged(path: path, detail: problems)
    }

    /// What `PRAGMA quick_check` finds wrong in `database` (its first five problems), or nil.
    static func integrityProblems(of database: SQLiteDatabase) throws -> String? {
        let problems = try database.prepare("PRAGMA quick_check(5)").rows([]) { $0.text(0) }
        return problems == ["ok"] ? nil : problems.joined(separator: "; ")
    }

    /// What `PRAGMA quick_check` finds in the spool at `path`, opened read-only: nil when it is
    /// sound, else the problems (or why it cannot be read as a database at all).
    static func damage(at path: String) -> String? {
        do {
            return try integrityProblems(of: SQLiteDatabase(path: path, readOnly: true))
        } catch {
            return "\(error)"
        }
    }

    /// Moves a damaged spool and its `-wal`/`-shm` files aside (to `PATH.damaged-TIME…`) so a
    /// router can start with an empty one; returns the new path of the database. Refuses
    /// while a router holds the spool.
    static func moveAside(_ path: String) throws(SpoolOpenError) -> String {
        guard access(path, F_OK) == 0 else { throw .failed(path: path, detail: "there is no spool here, so nothing to recover") }
        let claim = try SpoolOwnership(claiming: path)
        defer { withExtendedLifetime(claim) {} }
        let stamp = Int(Date().timeIntervalSince1970)
        let target = "\(path).damaged-\(stamp)"
        guard rename(path, target) == 0 else {
            throw .failed(path: path, detail: "cannot move it to '\(target)': \(String(cString: strerror(errno)))")
        }
        for suffix in ["-wal", "-shm"] where access(path + suffix, F_OK) == 0 {
            _ = rename(path + suffix, target + suffix)
        }
        return target
    }
}
