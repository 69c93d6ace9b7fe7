import Synchronization

/// Counts failed enrollments per client address: after `failures` within `window` of the first,
/// the address is refused until that window ends, so a code cannot be guessed at speed. At most
/// `capacity` addresses are remembered; a full table forgets the address whose window started
/// first.
final class EnrollmentThrottle: Sendable {
    private let failures: Int
    private let window: Duration
    private let capacity: Int
    /// Per address: when its window started and its failures in it.
    private let table = Mutex<[String: (start: ContinuousClock.Instant, count: Int)]>([:])

    init(failures: Int, window: Duration, capacity: Int = 4096) {
        self.failures = failures
        self.window = window
        self.capacity = capacity
    }

    /// How long `address` must wait, or nil when it may try now.
    func wait(for address: String, now: ContinuousClock.Instant = .now) -> Duration? {
        table.withLock { table in
            guard let entry = table[address] else { return nil }
            let end = entry.start + window
            guard end > now else {
                table[address] = nil
                return nil
            }
            return entry.count >= failures ? end - now : nil
        }
    }

    /// Records a failure of `address`.
    func fail(_ address: String, now: ContinuousClock.Instant = .now) {
        table.withLock { table in
            if let entry = table[address], entry.start + window > now {
                table[address] = (entry.start, entry.count + 1)
                return
            }
            if table.count >= capacity, let oldest = table.min(by: { $0.value.start < $1.value.start })?.key {
                table[oldest] = nil
            }
            table[address] = (now, 1)
        }
    }
}
