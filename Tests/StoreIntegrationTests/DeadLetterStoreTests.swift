import Foundation
import Logging
import SwitchyardPostgres
import SwitchyardSpool
import SwitchyardStore
import Testing

@testable import IntegrationSupport

/// The two engines of dead letters, held to one contract: the spool itself, and a real
/// PostgreSQL 15 server the spool hands its dead letters to.
@Suite(.timeLimit(.minutes(2)))
struct DeadLetterStoreTests {
    /// A spool, the dead letters as `engine` keeps them, and what must outlive the test.
    private static func open(_ engine: StoreEngine) throws -> (spool: Spool, store: any DeadLetterStore, cleanup: () -> Void) {
        let (spool, postgres, cleanup) = try engine.open()
        return (spool, postgres.map { SharedDeadLetters(shared: $0, spool: spool) } ?? spool, cleanup)
    }

    /// Gives up on `count` envelopes of `route` in `spool`, as a route worker does.
    private static func giveUp(_ count: Int, route: String, in spool: Spool, time: Int64 = 1_000) throws {
        var batch = SpoolBatch(route: route, time: time, deduplicate: false)
        for number in 1...count {
            batch.deadLetters.append(
                DeadLetter(
                    sink: "sink.collect", envelopeID: "e-\(number)", type: "t.A", subject: "s/\(number)", attempts: 3,
                    error: "sink down", envelope: [0, 0xFF, UInt8(number)]))
        }
        try spool.commit(batch)
    }

    @Test(arguments: StoreEngine.allCases)
    func deadLettersAreListedShownReplayedIntoTheSpoolAndDropped(engine: StoreEngine) throws {
        let (spool, store, cleanup) = try Self.open(engine)
        defer { cleanup() }
        try Self.giveUp(2, route: "durable", in: spool)
        try Self.giveUp(1, route: "other", in: spool)
        if let shared = store as? SharedDeadLetters { #expect(try shared.handOver() == 3) }

        let letters = try store.deadLetters(route: nil, limit: 10)
        #expect(letters.map(\.envelopeID) == ["e-1", "e-2", "e-1"])
        #expect(try store.deadLetters(route: "durable", limit: 10).count == 2)
        #expect(try store.deadLetters(route: nil, limit: 1).count == 1)
        let first = try #require(letters.first)
        #expect(try store.deadLetter(id: first.id) == first)
        #expect(first.envelope == [0, 0xFF, 1] && first.attempts == 3 && first.error == "sink down" && first.failedAt == 1_000)
        #expect(try store.deadLetter(id: 999_999) == nil)

        #expect(try store.replayDeadLetters(ids: [first.id, 999_999]) == 1)
        let requeued = try spool.load(route: "durable", after: 0, limit: 10)
        #expect(requeued.map(\.pending) == [["sink.collect"]] && requeued.first?.envelope == [0, 0xFF, 1])
        #expect(try store.deadLetter(id: first.id) == nil)
        #expect(try store.dropDeadLetters(ids: nil) == 2)
        #expect(try store.deadLetters(route: nil, limit: 10).isEmpty)
    }

    /// A router that crashed after the store committed a hand-over and before its spool forgot
    /// the letters hands them over again: stored once.
    @Test func aHandOverRepeatedAfterACrashStoresEachLetterOnce() throws {
        let (spool, store, cleanup) = try Self.open(.postgres)
        defer { cleanup() }
        let shared = try #require(store as? SharedDeadLetters)
        try Self.giveUp(150, route: "durable", in: spool)
        try shared.shared.addDeadLetters(try spool.deadLetters(route: nil, limit: 1000))
        #expect(try shared.handOver() == 150)
        #expect(try store.deadLetters(route: nil, limit: 1000).count == 150)
        #expect(try spool.deadLetters(route: nil, limit: 1000).isEmpty)
        // Replayed in pages, every letter once.
        #expect(try store.replayDeadLetters(ids: nil) == 150)
        #expect(try spool.load(route: "durable", after: 0, limit: 1000).count == 150)
    }
}
