import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An exclusive lock on a realm directory (`DIR/.lock`, `flock`). The `realm` commands and a
/// router's enrollment endpoint change the same files from different processes: each change
/// reads, modifies and writes under this lock, so none is lost.
public enum RealmLock {
    /// Runs `body` holding the realm's lock, waiting for another holder to finish.
    public static func withLock<Result>(
        directory: String, _ body: () throws(RealmError) -> Result
    ) throws(RealmError) -> Result {
        let path = URL(fileURLWithPath: directory, isDirectory: true).appendingPathComponent(".lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw RealmError("locking the realm: cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw RealmError("locking the realm (\(path)): \(String(cString: strerror(errno)))") }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}
