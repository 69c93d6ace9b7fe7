import Foundation

/// Runs blocking work on a thread of its own: a reload (which waits for deliveries to drain
/// and plugins to start) or a call to a PostgreSQL store (up to its timeout), which must not
/// hold one of the few threads of the server's executor.
func offThread<Value: Sendable, Failure: Error>(_ work: @escaping @Sendable () throws(Failure) -> Value) async throws(Failure) -> Value {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, Failure>, Never>) in
        Thread.detachNewThread { continuation.resume(returning: Result(catching: work)) }
    }
    return try result.get()
}
