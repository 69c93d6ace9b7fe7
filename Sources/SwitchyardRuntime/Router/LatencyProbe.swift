internal import CoreMetrics
import Glibc
import Synchronization

/// Times one envelope of a route at a time, from its source's emit to the first sink's `ok`
/// acknowledgement, into the route's `switchyard_route_latency_seconds` histogram.
///
/// Sampling keeps the hot path as it was: an emit reads one atomic while a sample is out, and
/// reads the clock only when it takes the next one. A slow route is timed envelope by envelope;
/// a busy one about once per round trip, which samples it evenly over time. A sample whose
/// acknowledgement never comes (the `when` filtered it, a full queue dropped it, the sink
/// refused it) is given back by the path that lost it, or else found stale when `/metrics` is
/// read (``releaseIfStale(olderThan:)``), so the probe never stays taken.
final class LatencyProbe: Sendable {
    /// The monotonic nanoseconds at which the current sample was emitted; 0 when none is out.
    /// The value identifies the sample: a late acknowledgement of an abandoned one cannot end
    /// the next.
    private let sample = Atomic<UInt64>(0)
    /// The delivery id that carried the latest sample to its sink; written by the route's
    /// worker, read by whichever thread acknowledges.
    private let deliveryID = Atomic<UInt64>(0)
    private let histogram: CoreMetrics.Timer

    init(histogram: CoreMetrics.Timer) {
        self.histogram = histogram
    }

    /// The monotonic clock in nanoseconds (never 0).
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec) | 1
    }

    /// At emit: the sample's emit time when this envelope becomes the sample, else 0.
    @inline(__always)
    func claim() -> UInt64 {
        guard sample.load(ordering: .relaxed) == 0 else { return 0 }
        let started = Self.now()
        return sample.compareExchange(expected: 0, desired: started, ordering: .relaxed).exchanged ? started : 0
    }

    /// At dispatch: the sample `started` goes out under `id`.
    func dispatched(_ started: UInt64, as id: UInt64) {
        guard sample.load(ordering: .acquiring) == started else { return }
        deliveryID.store(id, ordering: .releasing)
    }

    /// Whether `id` carries the current sample (checked on every acknowledgement of a probed
    /// delivery id).
    func carries(_ id: UInt64) -> Bool { deliveryID.load(ordering: .acquiring) == id }

    /// The sample `started` is acknowledged: recorded when `ok`, and the probe is free again.
    func finish(_ started: UInt64, ok: Bool) {
        let ended = Self.now()
        // `deliveryID` keeps the finished sample's id (ids are never reused) until the next
        // sample is dispatched: clearing it here could clear the next sample's instead.
        guard sample.compareExchange(expected: started, desired: 0, ordering: .acquiringAndReleasing).exchanged, ok else { return }
        histogram.recordNanoseconds(Int64(clamping: ended &- started))
    }

    /// The acknowledgement of delivery `id`, if it carries the sample.
    func acknowledged(_ id: UInt64, ok: Bool) {
        let started = sample.load(ordering: .acquiring)
        guard started != 0, carries(id) else { return }
        finish(started, ok: ok)
    }

    /// Frees the probe when its sample went out more than `limit` nanoseconds ago (its
    /// acknowledgement is not coming).
    func releaseIfStale(olderThan limit: UInt64 = 60_000_000_000) {
        let started = sample.load(ordering: .relaxed)
        guard started != 0, Self.now() &- started > limit else { return }
        finish(started, ok: false)
    }
}
