import Foundation

/// Runs blocking work (a drain, a reload, a plugin's piece, a call to a PostgreSQL store: they
/// wait on conditions, plugins or the network) on a thread of its own, named `name` (for
/// `top -H` and backtraces), so it never holds one of the few threads of Swift's cooperative
/// pool, which every other task of the process needs.
public func onOwnThread<Value: Sendable, Failure: Error>(
    named name: String, _ work: @escaping @Sendable () throws(Failure) -> Value
) async throws(Failure) -> Value {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, Failure>, Never>) in
        let thread = Thread { continuation.resume(returning: Result(catching: work)) }
        thread.name = name
        thread.start()
    }
    return try result.get()
}
