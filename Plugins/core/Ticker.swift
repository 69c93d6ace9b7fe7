import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// Emits `core.Tick` envelopes at a fixed interval on its own thread. When a blocking route is
/// full it waits for `resume` instead of dropping or spinning.
final class Ticker: @unchecked Sendable {
    // All mutable state is guarded by `condition`.
    private let condition = NSCondition()
    private var stopped = false
    private var resumed = false
    private let context: PluginContext
    private let interval: UInt64
    private let limit: Int

    init(context: PluginContext, interval: UInt64, limit: Int) {
        self.context = context
        self.interval = interval
        self.limit = limit
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "core.timer"
        thread.start()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    func resume() {
        condition.lock()
        resumed = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        var count = 0
        var deadline = Date(timeIntervalSinceNow: Double(interval) / 1e9)
        while limit == 0 || count < limit {
            condition.lock()
            while !stopped, Date() < deadline { _ = condition.wait(until: deadline) }
            let isStopped = stopped
            condition.unlock()
            if isStopped { return }
            count += 1
            let now = Clock.nowUnixNanos()
            let body: JSONValue = ["count": .int(count), "time": .string(Clock.rfc3339(unixNanos: now))]
            let envelope = Envelope(type: "core.Tick", time: now, body: body.serializedBytes())
            guard emitWaitingForRoom(envelope) else { return }
            deadline = max(deadline.addingTimeInterval(Double(interval) / 1e9), Date())
        }
        context.log(.info, "timer finished after \(count) ticks")
    }

    /// Emits, waiting for `resume` while the route is full; false once stopped.
    private func emitWaitingForRoom(_ envelope: Envelope) -> Bool {
        while true {
            condition.lock()
            resumed = false
            condition.unlock()
            switch context.emit(envelope, on: "tick") {
            case .ok: return true
            case .full:
                condition.lock()
                while !stopped, !resumed { condition.wait() }
                let isStopped = stopped
                condition.unlock()
                if isStopped { return false }
            case .stopped: return false
            case let other:
                context.log(.error, "tick was not taken: \(other)")
                return true
            }
        }
    }
}
