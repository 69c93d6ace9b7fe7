import Foundation
import SwitchyardSQLite

#if canImport(Glibc)
    import Glibc
#endif

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

extension Spool {
    /// What `PRAGMA quick_check` finds in the spool at `path`, opened read-only: nil when it is
    /// sound, else the problems (or why it cannot be read as a database at all).
    public static func damage(at path: String) -> String? {
        do {
            return try integrityProblems(of: SQLiteDatabase(path: path, readOnly: true))
        } catch {
            return "\(error)"
        }
    }
}

/// A router's claim on a spool: an exclusive `flock` on `PATH.lock`, held as long as this
/// value lives and released by the kernel when the process dies (even by `kill -9`), so a
/// stale claim cannot outlive its router.
final class SpoolOwnership: Sendable {
    private let descriptor: Int32

    init(claiming path: String) throws(SpoolOpenError) {
        let lockPath = path + ".lock"
        descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .failed(path: path, detail: "cannot open '\(lockPath)': \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var text = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &text, text.count, 0)
            let pid = count > 0 ? String(decoding: text[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            close(descriptor)
            throw .claimed(path: path, holder: pid.isEmpty ? "its lock is \(lockPath)" : "pid \(pid), lock \(lockPath)")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pwrite(descriptor, pid, pid.count, 0)
    }

    deinit { close(descriptor) }
}

extension Spool {
    /// Moves a damaged spool and its `-wal`/`-shm` files aside (to `PATH.damaged-TIME…`) so a
    /// router can start with an empty one; returns the new path of the database. Refuses
    /// while a router holds the spool.
    public static func moveAside(_ path: String) throws(SpoolOpenError) -> String {
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
