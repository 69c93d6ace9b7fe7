import Foundation
import SwitchyardCore
import SwitchyardSpool
import Testing

@Suite("Spool")
struct SpoolTests {
    private func temporarySpool() throws -> (Spool, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(ULID.next())").path
        let path = directory + "/spool.db"
        return (try Spool(path: path), directory)
    }

    private func insert(_ id: String, pending: [String] = ["sink.in"]) -> SpoolBatch.Insert {
        .init(envelopeID: id, pending: pending, envelope: Envelope(id: id, type: "t", subject: "s").serializedBytes())
    }

    @Test("inserts come back in order with their pending sinks; deletes remove them")
    func insertLoadDelete() throws {
        let (spool, directory) = try temporarySpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var batch = SpoolBatch(route: "r", time: 1, deduplicate: false)
        batch.inserts = [insert("a", pending: ["x.in", "y.in"]), insert("b"), insert("c")]
        let sequences = try spool.commit(batch).compactMap { $0 }
        #expect(sequences.count == 3)
        #expect(sequences == sequences.sorted())
        let loaded = try spool.load(route: "r", after: 0, limit: 10)
        #expect(loaded.map(\.sequence) == sequences)
        #expect(loaded[0].pending == ["x.in", "y.in"])
        #expect(try Envelope(serialized: loaded[1].envelope).id == "b")
        #expect(try spool.load(route: "other", after: 0, limit: 10).isEmpty)
        #expect(try spool.load(route: "r", after: sequences[0], limit: 1).map(\.sequence) == [sequences[1]])

        var done = SpoolBatch(route: "r", time: 2, deduplicate: false)
        done.deletes = [sequences[0], sequences[2]]
        done.updates = [.init(sequence: sequences[1], pending: ["z.in"], attempts: 3, lastError: "boom")]
        try spool.commit(done)
        let left = try spool.load(route: "r", after: 0, limit: 10)
        #expect(left.map(\.sequence) == [sequences[1]])
        #expect(left.first?.pending == ["z.in"])
        #expect(left.first?.attempts == 3)
        #expect(try spool.backlog(route: "r").count == 1)
    }

    @Test("deduplication skips ids seen before, across reopening, until forgotten")
    func deduplication() throws {
        let (spool, directory) = try temporarySpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var batch = SpoolBatch(route: "r", time: 100, deduplicate: true)
        batch.inserts = [insert("a"), insert("a"), insert("b")]
        let first = try spool.commit(batch)
        #expect(first[0] != nil)
        #expect(first[1] == nil)
        #expect(first[2] != nil)

        let reopened = try Spool(path: spool.path)
        var again = SpoolBatch(route: "r", time: 200, deduplicate: true)
        again.inserts = [insert("b"), insert("c")]
        let second = try reopened.commit(again)
        #expect(second[0] == nil)
        #expect(second[1] != nil)

        var otherRoute = SpoolBatch(route: "q", time: 200, deduplicate: true)
        otherRoute.inserts = [insert("a")]
        #expect(try reopened.commit(otherRoute)[0] != nil)

        try reopened.forgetSeen(route: "r", before: 150)
        var later = SpoolBatch(route: "r", time: 300, deduplicate: true)
        later.inserts = [insert("a"), insert("c")]
        let third = try reopened.commit(later)
        #expect(third[0] != nil)
        #expect(third[1] == nil)
    }

    @Test("dead letters are listed, shown, replayed into the spool for their sink, and dropped")
    func deadLetters() throws {
        let (spool, directory) = try temporarySpool()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var batch = SpoolBatch(route: "r", time: 42, deduplicate: false)
        for id in ["a", "b", "c"] {
            batch.deadLetters.append(
                .init(
                    sink: "out.in", envelopeID: id, type: "t", subject: "s", attempts: 5, error: "boom \(id)",
                    envelope: Envelope(id: id, type: "t").serializedBytes()))
        }
        try spool.commit(batch)
        let letters = try spool.deadLetters()
        #expect(letters.map(\.envelopeID) == ["a", "b", "c"])
        #expect(letters[1].error == "boom b")
        #expect(letters[1].failedAt == 42)
        #expect(try spool.deadLetter(id: letters[0].id)?.attempts == 5)
        #expect(try spool.deadLetters(route: "elsewhere").isEmpty)

        #expect(try spool.replayDeadLetters(ids: [letters[0].id, 999_999]) == 1)
        let replayed = try spool.load(route: "r", after: 0, limit: 10)
        #expect(replayed.count == 1)
        #expect(replayed.first?.pending == ["out.in"])
        #expect(replayed.first?.attempts == 0)
        #expect(try Envelope(serialized: replayed[0].envelope).id == "a")

        #expect(try spool.dropDeadLetters(ids: nil) == 2)
        #expect(try spool.deadLetters().isEmpty)
    }

    @Test("a spool path in a directory that cannot be created fails with the path")
    func unusablePath() {
        #expect {
            _ = try Spool(path: "/proc/definitely/not/spool.db")
        } throws: { error in
            "\(error)".contains("/proc/definitely/not/spool.db")
        }
    }
}
