internal import SwitchyardCore

/// Where a plain route is in its work between two slices on the pool: the batch it took from
/// its queue, the envelope it is delivering and the sink it got to. A full sink ends the slice
/// there; the next one resumes at that sink, with the same delivery id.
struct PlainRouteSlice {
    var batch: [QueuedEnvelope] = []
    /// The next envelope of `batch` to dispatch.
    var position = 0
    /// The envelope at `position` after `when` and the transform, while it goes to its sinks.
    var output: Envelope?
    /// The envelopes a script made of it that go after `output`, last first: the next one
    /// is taken from the end, without moving the rest.
    var laterOutputs: [Envelope] = []
    /// The next sink of `output`.
    var sink = 0
    /// The delivery id of a delivery the sink refused as full, reused when it is tried again.
    var retriedDeliveryID: UInt64?
    /// Whether the envelope at `position`, when it is the route's latency sample, went out.
    var probeSent = false
    /// How long the route last waited before trying a full sink again (nil: it has not).
    var pause: Duration?
    /// How long a slice watches the empty queue before the route goes idle.
    var spinBudget = SpinBudget()
    /// When the route last went idle: how soon work came back teaches `spinBudget`.
    var idleSince: ContinuousClock.Instant?
}
