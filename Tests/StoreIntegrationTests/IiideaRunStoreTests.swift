import Foundation
import SwitchyardStore
import Testing

@testable import IntegrationSupport

/// The two engines of iiideas' run history, held to one contract.
@Suite(.timeLimit(.minutes(2)))
struct IiideaRunStoreTests {
    private static func open(_ engine: StoreEngine) throws -> (any IiideaRunStore, cleanup: () -> Void) {
        let (spool, postgres, cleanup) = try engine.open()
        return (postgres ?? spool.store, cleanup)
    }

    @Test(arguments: StoreEngine.allCases)
    func runsKeepTheirInputAndFilterByOutcomeNewestFirstWithAnOffset(engine: StoreEngine) throws {
        let (store, cleanup) = try Self.open(engine)
        defer { cleanup() }
        // r1 succeeds, r2 fails, r3 is under way, r4 fails; started in that order.
        for (index, id) in ["r1", "r2", "r3", "r4"].enumerated() {
            try store.beginRun(
                IiideaRun(
                    id: id, iiidea: "i", triggerEnvelopeID: "e\(index)", startedAt: Int64(index + 1) * 1000, input: #"{"n":\#(index)}"#),
                keep: 10)
        }
        try store.endRun("r1", iiidea: "i", piece: .action, output: "{}", error: nil, keep: 10)
        try store.endRun("r2", iiidea: "i", piece: .service, output: nil, error: "no", keep: 10)
        try store.endRun("r4", iiidea: "i", piece: .action, output: nil, error: "later", keep: 10)
        #expect(try store.runs(iiidea: "i", outcome: .failed).map(\.id) == ["r4", "r2"])
        #expect(try store.runs(iiidea: "i", outcome: .succeeded).map(\.id) == ["r1"])
        #expect(try store.runs(iiidea: "i", outcome: .running).map(\.id) == ["r3"])
        #expect(try store.runs(iiidea: nil, outcome: .failed, limit: 1, offset: 1).map(\.id) == ["r2"])
        #expect(try store.runs(iiidea: "other").isEmpty)
        let all = try store.runs(iiidea: "i")
        #expect(all.map(\.id) == ["r4", "r3", "r2", "r1"])
        #expect(all.map(\.outcome) == [.failed, .running, .failed, .succeeded])
        #expect(all.last?.input == #"{"n":0}"#)
        let first = try #require(try store.run(id: "r1"))
        #expect(first.endedPiece == .action && first.output == "{}" && first.error == nil && first.endedAt != nil)
        #expect(try store.run(id: "missing") == nil)
        #expect(try store.runCounts(since: 2000) == ["i": 3])
    }

    @Test(arguments: StoreEngine.allCases)
    func theHistoryKeepsTheNewestRunsOfEachIiidea(engine: StoreEngine) throws {
        let (store, cleanup) = try Self.open(engine)
        defer { cleanup() }
        for number in 1...5 {
            try store.beginRun(IiideaRun(id: "a\(number)", iiidea: "a", triggerEnvelopeID: "e", startedAt: Int64(number)), keep: 3)
        }
        try store.beginRun(IiideaRun(id: "b1", iiidea: "b", triggerEnvelopeID: "e", startedAt: 1), keep: 3)
        #expect(try store.runs(iiidea: "a").map(\.id) == ["a5", "a4", "a3"])
        try store.endRun("a5", iiidea: "a", piece: .action, output: nil, error: nil, keep: 1)
        #expect(try store.runs(iiidea: "a").map(\.id) == ["a5"])
        #expect(try store.runs(iiidea: "b").map(\.id) == ["b1"], "another iiidea's history is its own")
    }
}
