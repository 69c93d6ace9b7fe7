import Foundation
internal import SwitchyardCore
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
/// leaves the ready list until the sink's plugin says it has room (ABI `sink_ready`) or its
/// retry time comes (see ``SinkRoom``).
///
/// Routes whose work blocks for long — at-least-once routes (SQLite transactions, fsync) and
/// iiideas (service calls over HTTP) — keep a thread of their own and never come here.
final class RouteWorkerPool: Sendable {
    /// The lists and the threads' bookkeeping, under one lock the pushing threads share.
    private struct Lists {
        /// Routes with work, in the order they got it.
        var ready: [RouteRuntime] = []
        var readyHead = 0
        /// Routes waiting to retry a full sink, with the time to retry.
        var retries: [(due: ContinuousClock.Instant, route: RouteRuntime)] = []
        /// Retries added from outside the pool, counted so that a sleeping thread wakes to
        /// reckon its deadline again.
        var retriesAdded = 0
        var threads = 0
        var sleeping = 0
        /// Threads spinning for work: at most one, so idle threads do not take the processor
        /// from the event loops that feed the routes.
        var spinning = 0
        var stopping = false
        /// Threads that have not returned yet; ``stop()`` waits for them.
        var running = 0

        var readyIsEmpty: Bool { readyHead == ready.count }

        /// Takes the route at the head of the ready list.
        mutating func popReady() -> RouteRuntime? {
            guard !readyIsEmpty else { return nil }
            let route = ready[readyHead]
            readyHead += 1
            if readyIsEmpty {
                ready.removeAll(keepingCapacity: true)
                readyHead = 0
            }
            return route
        }

        /// Puts `route` on the retry list until `wait` is over; on the ready list if the sink's
        /// word came already. The word's signal then finds it on one list or the other: it
        /// counts before it looks (``RouteWorkerPool/retryNow(waitingFor:)``), and this looks
        /// at the count with the lock held.
        mutating func waitForRoom(_ route: RouteRuntime, _ wait: SinkWait) {
            if wait.isOver {
                ready.append(route)
            } else {
                retries.append((ContinuousClock.now + wait.pause, route))
            }
        }

        /// Moves the routes whose retry time has come to the ready list.
        mutating func moveDueRetries() {
            guard !retries.isEmpty else { return }
            let now = ContinuousClock.now
            moveRetries { due, _ in due <= now }
        }

        /// Moves the routes on the retry list that `isDue` picks to the ready list, in their
        /// order; whether it moved any.
        @discardableResult
        mutating func moveRetries(where isDue: (ContinuousClock.Instant, RouteRuntime) -> Bool) -> Bool {
            var due: [RouteRuntime] = []
            retries.removeAll { entry in
                guard isDue(entry.due, entry.route) else { return false }
                due.append(entry.route)
                return true
            }
            ready += due
            return !due.isEmpty
        }
    }

    private let lists = Locked(Lists())
    /// The length of the ready list, written under the lock: an idle thread spins on it
    /// without taking the lock the pushing threads need.
    private let readyCount = Atomic<Int>(0)

    /// At most this many threads, started as work arrives.
    let limit: Int
    /// A pool of at most `threads` threads.
    init(threads: Int) {
        limit = max(1, threads)
        AllocatorTuning.applied
    }

    /// How many threads it has started.
    var threadCount: Int { lists.withLock { $0.threads } }

    /// Whether some route waits for a thread (without the lock: a hint).
    var hasReadyRoutes: Bool { readyCount.load(ordering: .relaxed) > 0 }

    /// Runs `body` on the lists with the lock held, then publishes the ready list's length
    /// (every change to the ready list goes through here, so the count the spinning thread
    /// reads is never stale for long).
    private func changingLists<Result>(_ body: (inout Lists) -> Result) -> Result {
        lists.withLock { lists in
            defer { readyCount.store(lists.ready.count - lists.readyHead, ordering: .relaxed) }
            return body(&lists)
        }
    }

    /// Puts `route`, which has just become scheduled, on the ready list.
    func schedule(_ route: RouteRuntime) {
        let start: Int? = changingLists { lists in
            lists.ready.append(route)
            return wakeForWork(&lists, startingUpTo: limit)
        }
        if let start { startThread(number: start) }
    }

    /// Makes sure a thread will look at the lists, lock held: the spinning thread will, else a
    /// sleeping one is signalled, else — while fewer than `threads` have started — a new one is
    /// counted, and its number returned for the caller to start outside the lock. With none of
    /// those, every thread is busy and looks at the lists before it sleeps.
    private func wakeForWork(_ lists: inout Lists, startingUpTo threads: Int) -> Int? {
        if lists.spinning > 0 { return nil }
        if lists.sleeping > 0 {
            self.lists.signal()
            return nil
        }
        guard lists.threads < threads, !lists.stopping else { return nil }
        lists.threads += 1
        lists.running += 1
        return lists.threads
    }

    /// Puts `route`, whose sink was full on a thread outside the pool (an inline delivery, see
    /// ``RouteRuntime/deliversInline``), on the retry list: a pool thread runs it when `wait`
    /// is over.
    func retry(_ route: RouteRuntime, waitingFor wait: SinkWait) {
        let start: Int? = changingLists { lists in
            lists.waitForRoom(route, wait)
            // A sleeping thread's deadline may be later than this one (or none): it wakes to
            // reckon it again. Work due later needs one thread, not one more.
            lists.retriesAdded += 1
            return wakeForWork(&lists, startingUpTo: 1)
        }
        if let start { startThread(number: start) }
    }

    /// Runs now the routes on the retry list that deliver to `instance` (its plugin says a
    /// full sink has room again, or it stops taking deliveries), instead of at their time.
    func retryNow(waitingFor instance: InstanceRuntime) {
        let start: Int? = changingLists { lists in
            guard !lists.retries.isEmpty,
                lists.moveRetries(where: { _, route in route.sinks.contains { $0.instance === instance } })
            else { return nil }
            return wakeForWork(&lists, startingUpTo: limit)
        }
        if let start { startThread(number: start) }
    }

    /// Starts the pool's thread number `number`, already counted.
    private func startThread(number: Int) {
        let name = "route worker \(number)"
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
        lists.withLock { lists in
            lists.stopping = true
            self.lists.broadcast()
        }
        lists.withLock(waitingUntil: { $0.running == 0 }) { _, _ in }
    }

    private func work() {
        // How long this thread watches for work before it sleeps: a busy source refills a
        // route within microseconds, and a wake-up costs a futex call (see SpinBudget).
        var budget = SpinBudget()
        while let route = next(&budget) {
            let outcome = route.runSlice()
            switch outcome {
            case .more: changingLists { $0.ready.append(route) }
            case .idle, .finished: break
            case .retry(let wait): changingLists { $0.waitForRoom(route, wait) }
            }
        }
        lists.withLock { lists in
            lists.running -= 1
            self.lists.broadcast()
        }
    }

    /// What a look at the lists found.
    private enum Turn {
        case run(RouteRuntime)
        case spin
        case sleep(until: ContinuousClock.Instant?, retriesAdded: Int)
        case stop
    }

    /// The next route to run, waiting (spinning a little first, as `budget` says) while there
    /// is none; `nil` once the pool stops.
    private func next(_ budget: inout SpinBudget) -> RouteRuntime? {
        var spun = false
        while true {
            let spins = budget.spins
            let turn: Turn = changingLists { lists in
                if lists.stopping { return .stop }
                lists.moveDueRetries()
                if let route = lists.popReady() { return .run(route) }
                if !spun, spins > 0, lists.spinning == 0 {
                    lists.spinning += 1
                    return .spin
                }
                lists.sleeping += 1
                return .sleep(until: lists.retries.map(\.due).min(), retriesAdded: lists.retriesAdded)
            }
            switch turn {
            case .run(let route): return route
            case .stop: return nil
            case .spin:
                spun = true
                for _ in 0..<spins where readyCount.load(ordering: .relaxed) == 0 { sched_yield() }
                if readyCount.load(ordering: .relaxed) > 0 { budget.found() } else { budget.missed() }
                lists.withLock { $0.spinning -= 1 }
            case .sleep(let due, let retriesAdded):
                // Sleeps until a route is ready, the pool stops, the first retry is due or a
                // retry is added from outside (the ready list is empty now; a schedule or a
                // retry signals a sleeper).
                let slept = ContinuousClock.now
                lists.withLock(
                    waitingUntil: { $0.stopping || !$0.readyIsEmpty || $0.retriesAdded != retriesAdded }, deadline: due
                ) { lists, _ in lists.sleeping -= 1 }
                budget.idled(for: slept.duration(to: .now))
                spun = false
            }
        }
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
    /// A sink was full: run it again when the wait is over.
    case retry(SinkWait)
}
