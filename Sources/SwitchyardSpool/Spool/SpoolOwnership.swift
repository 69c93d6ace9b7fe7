import Foundation

#if canImport(Glibc)
    import Glibc
#endif

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
