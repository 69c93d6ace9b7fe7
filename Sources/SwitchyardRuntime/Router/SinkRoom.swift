internal import SwitchyardCore
import Synchronization

/// When a full sink of one instance is worth trying again: the plugin's word (ABI
/// `sink_ready`), or a pause.
///
/// A plugin that never says so is retried on a timer, 1 ms doubling to 50 ms. Once it has
/// said so, the host takes its word (ABI section 5): its full ports are retried when it
/// speaks, and otherwise only after ``safetyPause`` (1 s), so a sink that stays full (a broker
/// that is down) costs next to no wake-ups while it does.
final class SinkRoom: Sendable {
    /// How many times the plugin said so, or the instance stopped taking deliveries: a route
    /// notes it before it tries, and waits until it changes. Read on every delivery, without a
    /// lock; sequentially consistent for the waiters' handshake (``WakeSignal``).
    private let signals = Atomic<UInt64>(0)
    /// Wakes the route threads (at-least-once, iiideas) that wait for the count to change.
    private let waiters = WakeSignal()
    /// Whether the plugin has ever said so.
    private let speaksUp = Atomic<Bool>(false)

    /// Whether the plugin has said so at least once: from then on it is taken at its word.
    var pluginSpeaksUp: Bool { speaksUp.load(ordering: .relaxed) }

    /// The first pause after a full answer from a plugin that does not say when it has room.
    static let firstPause = Duration.milliseconds(1)
    /// The longest pause for such a plugin.
    static let longestPause = Duration.milliseconds(50)
    /// The pause for a plugin that says when it has room, in case a word went missing.
    let safetyPause: Duration

    /// Room for an instance whose plugin, once it says when it has room, is tried again after
    /// `safetyPause` without a word.
    init(safetyPause: Duration) {
        self.safetyPause = safetyPause
    }

    /// How many signals have come so far: read before a delivery, so a signal that comes
    /// between the sink's "full" and the wait still ends the wait. Acquiring: what the plugin
    /// freed before it signalled is seen by the try that follows.
    var count: UInt64 { signals.load(ordering: .acquiring) }

    /// The plugin said a full port has room again (`fromPlugin`), or the instance stops
    /// taking deliveries: every wait ends.
    func signal(fromPlugin: Bool) {
        if fromPlugin, !speaksUp.load(ordering: .relaxed) { speaksUp.store(true, ordering: .relaxed) }
        signals.add(1, ordering: .sequentiallyConsistent)
        waiters.signal()
    }

    /// The pause before the next try after the sink answered "full" again, `previous` being
    /// the pause before this try (nil: the first answer); on the timer alone with `timerOnly`.
    func pause(after previous: Duration?, timerOnly: Bool = false) -> Duration {
        if !timerOnly, pluginSpeaksUp { return safetyPause }
        guard let previous else { return Self.firstPause }
        return min(previous * 2, Self.longestPause)
    }

    /// Waits until a signal after the `seen`-th comes, or `pause` has passed.
    func wait(after seen: UInt64, atMost pause: Duration) {
        _ = waiters.wait(until: .now + pause) { signals.load(ordering: .sequentiallyConsistent) == seen }
    }
}

/// What a route waits for after a sink answered "full": a word from the sink's plugin since
/// the try, or the end of the pause.
struct SinkWait {
    /// The longest wait.
    let pause: Duration
    /// The sink's instance's room.
    let room: SinkRoom
    /// Its count before the try.
    let seen: UInt64

    /// Whether the word has come: the route need not wait at all.
    var isOver: Bool { room.count != seen }
}
