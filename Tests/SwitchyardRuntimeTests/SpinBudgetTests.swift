import Testing

@testable import SwitchyardRuntime

/// The idle workers' watch for more work: kept while it finds work, given up when work comes
/// further apart than a watch lasts, and taken up again when work comes back close together.
@Suite struct SpinBudgetTests {
    @Test func aBudgetThatKeepsMissingFallsToNothing() {
        var budget = SpinBudget()
        #expect(budget.spins == SpinBudget.most)
        for _ in 0..<7 { budget.missed() }
        #expect(budget.spins == 0, "a paced source (work 200 µs apart) must not cost a watch per envelope")
        // Work that came long after the worker slept teaches nothing.
        budget.idled(for: .microseconds(200))
        #expect(budget.spins == 0)
    }

    @Test func workThatComesSoonAfterTheWorkerSleptBringsTheWatchBack() {
        var budget = SpinBudget()
        for _ in 0..<7 { budget.missed() }
        budget.idled(for: .microseconds(10))
        #expect(budget.spins == SpinBudget.restart)
        budget.found()
        budget.found()
        budget.found()
        #expect(budget.spins == SpinBudget.most, "a busy source earns the full watch back")
        budget.found()
        #expect(budget.spins == SpinBudget.most)
    }

    @Test func oneMissHalvesAndOneFindRestores() {
        var budget = SpinBudget()
        budget.missed()
        #expect(budget.spins == SpinBudget.most / 2)
        budget.found()
        #expect(budget.spins == SpinBudget.most)
    }
}
