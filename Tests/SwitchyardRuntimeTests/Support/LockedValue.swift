import Foundation

/// The test target's `Mutex`, shadowing Synchronization's: that one waits on a futex that
/// ThreadSanitizer does not see on Linux, so `scripts/sanitize` would report every value it
/// guards as racing. This one is an `NSLock` (pthread), which the sanitizer understands.
final class Mutex<Value>: @unchecked Sendable {
    // `value` is only touched with `lock` held.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, under the lock.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
