/// How many times an idle worker yields the processor watching for more work before it
/// sleeps, learned from what watching found.
///
/// Watching pays when work comes within microseconds (a busy source refilling a route): the
/// worker stays awake and nobody pays a wake-up. It costs when work comes further apart (a
/// paced source, 5,000 messages a second): each gap burns the whole budget in `sched_yield`
/// and then sleeps anyway. So the budget doubles when watching found work, or when work came
/// so soon after the worker stopped watching that watching would have found it, and halves
/// when watching found nothing. The route worker pool keeps one per thread, a plain route one
/// in its slice state.
struct SpinBudget {
    /// The most yields in one watch.
    static let most = 64
    /// Where a budget that found work starts again from nothing.
    static let restart = 8
    /// Work that came within this after the worker stopped watching would have been found by a
    /// full watch (64 yields take about this long when nothing else wants the processor).
    static let nearMiss = Duration.microseconds(50)

    /// The yields of the next watch (0: sleep at once).
    private(set) var spins = SpinBudget.most

    /// Watching found work.
    mutating func found() { spins = min(Self.most, max(spins * 2, Self.restart)) }

    /// Watching ran out without work.
    mutating func missed() { spins /= 2 }

    /// Work came `gap` after the worker stopped watching (it slept, or its route went idle).
    mutating func idled(for gap: Duration) {
        if gap < Self.nearMiss { found() }
    }
}
