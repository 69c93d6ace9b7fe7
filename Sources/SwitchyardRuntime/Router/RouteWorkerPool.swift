import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The threads that run the router's plain routes: a few threads (one per core by default)
/// for any number of routes, instead of a thread per route.
///
/// A route is *scheduled* while it has work: its queue turned non-empty, it was closed, or it
/// waits to retry a sink that was full. Its queue decides that, under its own lock (see
/// ``RouteQueue``), so a route is in the pool at most once and runs on one thread at a time:
/// its envelopes keep their order. A thread takes the route at the head of the ready list, lets
/// it work for a slice (``RouteRuntime/runSlice()``) and puts it back at the tail if it has more,
/// so one busy route cannot starve the others. A full sink never holds a thread: the route
/// leaves the ready list until its retry time (1 ms, doubling to 50 ms, as before).
///
/// Routes whose work blocks for long — at-least-once routes (SQLite transactions, fsync) and
/// iiideas (service calls over HTTP) — keep a thread of their own and never come here.
final class RouteWorkerPool: @unchecked Sendable {
    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    /// Routes with work, in the order they got it.
    private var ready: [RouteRuntime] = []
    private var readyHead = 0
    /// Routes waiting to retry a full sink, with the time to retry.
    private var retries: [(due: ContinuousClock.Instant, route: RouteRuntime)] = []
    private var threads = 0
    private var sleeping = 0
    /// Threads spinning for work: at most one, so idle threads do not take the processor from
    /// the event loops that feed the routes.
    private var spinning = 0
    private var stopping = false
    /// Threads that have not returned yet; ``stop()`` waits for them.
    private var running = 0
    /// The length of the ready list, written under `condition`: an idle thread spins on it
    /// without taking the lock the pushing threads need.
    private let readyCount = Atomic<Int>(0)

    /// At most this many threads, started as work arrives.
    let limit: Int
    /// How often an idle thread yields the processor looking for work before it sleeps: a busy
    /// source refills a route within microseconds, and a wake-up costs a futex call.
    static let spinsBeforeSleeping = 64

    /// A pool of at most `threads` threads.
    init(threads: Int) {
        limit = max(1, threads)
    }

    /// How many threads it has started.
    var threadCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return threads
    }

    /// Whether some route waits for a thread (without the lock: a hint).
    var hasReadyRoutes: Bool { readyCount.load(ordering: .relaxed) > 0 }

    /// Whether the ready list is empty. Called with `condition` held.
    private var readyIsEmpty: Bool { readyHead == ready.count }

    /// Puts `route`, which has just become scheduled, on the ready list.
    func schedule(_ route: RouteRuntime) {
        condition.lock()
        defer { condition.unlock() }
        ready.append(route)
        readyCount.store(ready.count - readyHead, ordering: .relaxed)
        if spinning > 0 {
            // The spinning thread takes it.
        } else if sleeping > 0 {
            condition.signal()
        } else if threads < limit, !stopping {
            startThread()
        }
    }

    /// Starts one more thread. Called with `condition` held.
    private func startThread() {
        threads += 1
        running += 1
        let name = "route worker \(threads)"
        let thread = Thread { [self] in
            // Named from inside: Foundation on Linux leaves a thread the name of its creator
            // (an event loop's, which made `top -H` and the footprint harness misleading).
            Thread.current.name = name
            Self.nameCallingThread(name)
            work()
        }
        thread.start()
    }

    /// Writes `name` to the kernel's name of the calling thread (`/proc/thread-self/comm`,
    /// at most 15 bytes). Foundation's setter alone left a pool thread under its creator's
    /// name in one ThreadSanitizer run; the kernel's copy is what `top -H` shows.
    private static func nameCallingThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    /// Stops the threads once they are idle, and waits for them. Routes still scheduled are not
    /// run again (the router closes and drains every route before it stops the pool).
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while running > 0 { condition.wait() }
        condition.unlock()
    }

    private func work() {
        condition.lock()
        defer {
            running -= 1
            condition.broadcast()
            condition.unlock()
        }
        while let route = next() {
            condition.unlock()
            let outcome = route.runSlice()
            condition.lock()
            switch outcome {
            case .more:
                ready.append(route)
                readyCount.store(ready.count - readyHead, ordering: .relaxed)
            case .idle, .finished: break
            case .retry(let after): retries.append((ContinuousClock.now + after, route))
            }
        }
    }

    /// The next route to run, waiting (spinning a little first) while there is none; `nil` once
    /// the pool stops. Called and returns with `condition` held.
    private func next() -> RouteRuntime? {
        var spun = false
        while !stopping {
            moveDueRetries()
            if !readyIsEmpty {
                let route = ready[readyHead]
                readyHead += 1
                if readyIsEmpty {
                    ready.removeAll(keepingCapacity: true)
                    readyHead = 0
                }
                readyCount.store(ready.count - readyHead, ordering: .relaxed)
                return route
            }
            if !spun, spinning == 0 {
                spun = true
                spinning += 1
                condition.unlock()
                for _ in 0..<Self.spinsBeforeSleeping where readyCount.load(ordering: .relaxed) == 0 { sched_yield() }
                condition.lock()
                spinning -= 1
                continue
            }
            sleeping += 1
            if let due = retries.map(\.due).min() {
                let (seconds, attoseconds) = max(ContinuousClock.now.duration(to: due), .zero).components
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) * 1e-18))
            } else {
                condition.wait()
            }
            sleeping -= 1
            spun = false
        }
        return nil
    }

    /// Moves the routes whose retry time has come to the ready list. Called with `condition` held.
    private func moveDueRetries() {
        guard !retries.isEmpty else { return }
        let now = ContinuousClock.now
        retries.removeAll { entry in
            guard entry.due <= now else { return false }
            ready.append(entry.route)
            return true
        }
        readyCount.store(ready.count - readyHead, ordering: .relaxed)
    }
}

/// What a route's slice of work left it with.
enum RouteSliceOutcome {
    /// It has more queued: back to the end of the ready list.
    case more
    /// Its queue is empty and it is no longer scheduled.
    case idle
    /// Its queue was closed and is empty: it has finished for good.
    case finished
    /// A sink was full: run it again after this long.
    case retry(after: Duration)
}
