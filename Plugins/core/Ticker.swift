import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// Emits `core.Tick` envelopes at a fixed interval on its own thread. When a blocking route is
/// full it waits for `resume` instead of dropping or spinning.
final class Ticker: Sendable {
    private let gate: SourceGate<Void>
    private let context: PluginContext
    private let interval: UInt64
    private let limit: Int

    init(context: PluginContext, interval: UInt64, limit: Int) {
        self.context = context
        self.interval = interval
        self.limit = limit
        gate = SourceGate(context: context, port: "tick")
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "core.timer"
        thread.start()
    }

    func stop() { gate.stop() }

    func resume() { gate.resume() }

    private func run() {
        var count = 0
        let period = Duration.nanoseconds(Int64(clamping: interval))
        var deadline = ContinuousClock.now + period
        while limit == 0 || count < limit {
            guard gate.sleep(until: deadline) else { return }
            count += 1
            let now = Clock.nowUnixNanos()
            let body: JSONValue = ["count": .int(count), "time": .string(Clock.rfc3339(unixNanos: now))]
            let envelope = Envelope(type: "core.Tick", time: now, body: body.serializedBytes())
            guard gate.emit(envelope) else { return }
            deadline = max(deadline + period, ContinuousClock.now)
        }
        context.log(.info, "timer finished after \(count) ticks")
        gate.finished()
    }
}
