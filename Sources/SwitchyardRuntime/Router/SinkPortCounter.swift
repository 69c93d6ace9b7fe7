import Synchronization

/// How many deliveries a sink port took (over every route to it).
final class SinkPortCounter: Sendable {
    let taken = Atomic<Int>(0)
}
