import Foundation
import Testing

@testable import IntegrationSupport

/// At-least-once routes through the binary, with the testkit plugin's durable numbered source
/// and scriptable sink.
@Suite(.timeLimit(.minutes(3)))
struct DeliveryTests {
    private static func id(_ number: Int) -> String { "n-" + String(repeating: "0", count: 8 - String(number).count) + String(number) }

    /// The sandbox with testkit installed and a route file: `numbers` → `collect`.
    private func prepare(
        count: Int, subjects: Int = 1, collect: String = "", route: String = "", sandbox existing: Sandbox? = nil
    ) throws -> Sandbox {
        let sandbox = try existing ?? Sandbox()
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              source: { plugin: testkit, numbers: { count: \(count), subjects: \(subjects), state: "\(sandbox.path("source.state"))" } }
              sink:   { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))"\(collect.isEmpty ? "" : ", " + collect) } }
            routes:
              - name: durable
                from: source.numbers
                to: sink.collect
                delivery: at-least-once
            \(route.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            """
        )
        return sandbox
    }

    private func start(_ sandbox: Sandbox) throws -> RouterProcess {
        try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--spool", sandbox.path("spool.db")], in: sandbox.root)
    }

    /// `(id, subject)` per collected line.
    private func collected(_ sandbox: Sandbox) -> [(id: String, subject: String)] {
        sandbox.lines(of: "collected.txt").compactMap { line in
            let parts = line.split(separator: " ")
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }
    }

    private func dlq(_ arguments: [String], _ sandbox: Sandbox) throws -> (status: Int32, output: String, errors: String) {
        try RouterProcess.runToExit(["dlq"] + arguments + ["--spool", sandbox.path("spool.db")], in: sandbox.root)
    }

    @Test func killDashNineMidStreamThenRestartDeliversEveryEnvelope() async throws {
        let total = 20_000
        let sandbox = try prepare(count: total, subjects: 4, route: "dedupe: 10m")
        let first = try start(sandbox)
        await first.waitUntil("3000 envelopes collected") { collected(sandbox).count >= 3000 }
        _ = first.stop(signal: SIGKILL)
        let beforeKill = Set(collected(sandbox).map(\.id))
        #expect(beforeKill.count < total, "the stream must still be running at the kill")

        let second = try start(sandbox)
        await second.waitUntil("every envelope collected", timeout: .seconds(90)) { Set(collected(sandbox).map(\.id)).count >= total }
        #expect(second.stop() == 0)
        let lines = collected(sandbox)
        let ids = lines.map(\.id)
        #expect(Set(ids) == Set((1...total).map(Self.id)))
        // A redelivery can only be of an envelope whose acknowledgement the sink had given and
        // the killed router had not yet committed: one batch at most, never one delivered after.
        let duplicates = Dictionary(grouping: ids, by: { $0 }).filter { $0.value.count > 1 }.keys
        #expect(duplicates.allSatisfy(beforeKill.contains))
        #expect(duplicates.count <= 1024, "\(duplicates.count) duplicates")
        // Per subject, the envelopes delivered after the restart keep their order.
        let afterRestart = lines.dropFirst(beforeKill.count)
        for subject in ["s0", "s1", "s2", "s3"] {
            let numbers = afterRestart.filter { $0.subject == subject && !beforeKill.contains($0.id) }.compactMap {
                Int($0.id.dropFirst(2))
            }
            #expect(numbers == numbers.sorted(), "subject \(subject) out of order")
        }
        let log = second.standardError
        #expect(RouteTotals.counter("loaded_from_spool", route: "durable", in: log) ?? 0 > 0, "\(log)")
    }

    @Test func aSourceRedeliveringWhatWasAcceptedIsDeduplicated() async throws {
        let sandbox = try prepare(count: 100, route: "dedupe: 1h")
        let first = try start(sandbox)
        await first.waitUntil("100 envelopes collected") { collected(sandbox).count >= 100 }
        #expect(first.stop() == 0)
        // The source forgets what was settled, as a broker that lost its session would, and
        // sends all 100 again.
        try FileManager.default.removeItem(atPath: sandbox.path("source.state"))
        let second = try start(sandbox)
        await second.waitUntil("the source settled all 100 again") {
            (try? String(contentsOfFile: sandbox.path("source.state"), encoding: .utf8))?.hasPrefix("100") == true
        }
        #expect(second.stop() == 0)
        #expect(collected(sandbox).map(\.id) == (1...100).map(Self.id))
        #expect(RouteTotals.counter("deduplicated", route: "durable", in: second.standardError) == 100, "\(second.standardError)")
        #expect(RouteTotals.counter("spooled", route: "durable", in: second.standardError) == 0)
    }

    /// A sink that fails every first attempt: an at-most-once route does not try again; the
    /// testkit source, told to retry, sends each envelope again. The totals say what happened —
    /// sent 40, failed 20, delivered 20 — where they used to say "delivered 40".
    @Test func theTotalsCountOnlyWhatASinkAcknowledgedAsDelivered() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              source: { plugin: testkit, numbers: { count: 20, state: "\(sandbox.path("source.state"))" } }
              sink:   { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", fail_first: 1 } }
            routes:
              - { name: lossy, from: source.numbers, to: sink.collect }
            """)
        let router = try start(sandbox)
        await router.waitUntil("the source settled all 20") {
            (try? String(contentsOfFile: sandbox.path("source.state"), encoding: .utf8))?.hasPrefix("20") == true
        }
        #expect(router.stop() == 0)
        let log = router.standardError
        #expect(RouteTotals.counter("received", route: "lossy", in: log) == 40, "\(log)")
        #expect(RouteTotals.counter("sent", route: "lossy", in: log) == 40)
        #expect(RouteTotals.counter("failed", route: "lossy", in: log) == 20)
        #expect(RouteTotals.counter("delivered", route: "lossy", in: log) == 20)
        #expect(collected(sandbox).count == 20)
    }

    @Test func failingAttemptsAreRetriedAndKeepTheOrderOfEachSubject() async throws {
        let sandbox = try prepare(
            count: 200, subjects: 3, collect: "fail_first: 2", route: "retry: { attempts: 5, backoff: 5ms, max_backoff: 20ms }")
        let router = try start(sandbox)
        await router.waitUntil("200 envelopes collected") { collected(sandbox).count >= 200 }
        #expect(router.stop() == 0)
        let lines = collected(sandbox)
        #expect(lines.count == 200)
        for subject in ["s0", "s1", "s2"] {
            let numbers = lines.filter { $0.subject == subject }.compactMap { Int($0.id.dropFirst(2)) }
            #expect(numbers == numbers.sorted(), "subject \(subject) out of order: \(numbers)")
        }
        let log = router.standardError
        #expect(RouteTotals.counter("retried", route: "durable", in: log) == 400, "\(log)")
        #expect(RouteTotals.counter("delivered", route: "durable", in: log) == 200)
        #expect(RouteTotals.counter("failed", route: "durable", in: log) == 400)
        #expect(RouteTotals.counter("dead_lettered", route: "durable", in: log) == 0)
    }

    @Test func retriesRunOutIntoDeadLettersThatReplayOnTheRunningRouter() async throws {
        let sandbox = try Sandbox()
        let down = sandbox.path("sink-down")
        #expect(FileManager.default.createFile(atPath: down, contents: nil))
        _ = try prepare(
            count: 5, collect: "fail_while: \"\(down)\"", route: "retry: { attempts: 3, backoff: 5ms, max_backoff: 10ms }", sandbox: sandbox
        )
        let router = try start(sandbox)
        var listing = ""
        await router.waitUntil("5 dead letters") {
            listing = (try? dlq(["list"], sandbox))?.output ?? ""
            return listing.split(separator: "\n").count == 5
        }
        let rows = listing.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        try #require(rows.count == 5 && rows.allSatisfy { $0.count > 8 }, "\(listing)")
        #expect(rows.map { $0[5] } == (1...5).map(Self.id))
        for row in rows {
            #expect(row[1] == "durable")
            #expect(row[2] == "sink.collect")
            #expect(row[3] == "attempts=3")
            #expect(row[8].contains("test sink down"))
        }
        let shown = try dlq(["show", rows[0][0]], sandbox)
        #expect(shown.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(shown.output.utf8)) as? [String: Any])
        #expect(object["envelope_id"] as? String == Self.id(1))
        #expect((object["envelope"] as? [String: Any])?["body"] as? [String: Int] == ["n": 1])
        #expect(try dlq(["show", "999999"], sandbox).status != 0)
        #expect(collected(sandbox).isEmpty)

        // The sink comes back; replaying on the running router delivers everything, in order.
        try FileManager.default.removeItem(atPath: down)
        let replay = try dlq(["replay", "--all"], sandbox)
        #expect(replay.output.contains("replayed 5"), "\(replay)")
        await router.waitUntil("5 replayed envelopes collected") { collected(sandbox).count >= 5 }
        #expect(collected(sandbox).map(\.id) == (1...5).map(Self.id))
        #expect(try dlq(["list"], sandbox).output.isEmpty)
        #expect(router.stop() == 0)
        let log = router.standardError
        #expect(RouteTotals.counter("dead_lettered", route: "durable", in: log) == 5, "\(log)")
        #expect(RouteTotals.counter("retried", route: "durable", in: log) == 10)

        // On the stopped router's database: a dead letter is dropped for good.
        #expect(FileManager.default.createFile(atPath: down, contents: nil))
        try sandbox.writeRoutes(
            """
            instances:
              source: { plugin: testkit, numbers: { count: 6, state: "\(sandbox.path("source.state"))" } }
              sink:   { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", reject: true } }
            routes:
              - { name: durable, from: source.numbers, to: sink.collect, delivery: at-least-once }
            """
        )
        let rejecting = try start(sandbox)
        await rejecting.waitUntil("the rejected envelope dead-lettered") {
            (try? dlq(["list", "--json"], sandbox))?.output.contains(Self.id(6)) == true
        }
        #expect(rejecting.stop() == 0)
        let letters = try dlq(["list", "--json"], sandbox).output.split(separator: "\n")
        #expect(letters.count == 1)
        #expect(letters.first?.contains("\"attempts\":1") == true, "a rejection is not retried: \(letters)")
        #expect(try dlq(["drop", "--all"], sandbox).output.contains("dropped 1"))
        #expect(try dlq(["list"], sandbox).output.isEmpty)
    }

    @Test func aBacklogBeyondTheMemoryWindowSpillsToDiskSurvivesShutdownAndDrains() async throws {
        let total = 3000
        let sandbox = try Sandbox()
        let down = sandbox.path("sink-down")
        #expect(FileManager.default.createFile(atPath: down, contents: nil))
        _ = try prepare(
            count: total, subjects: 2, collect: "fail_while: \"\(down)\"",
            route: "retry: { attempts: 100000, backoff: 20ms, max_backoff: 50ms }\nqueue: { size: 16, on_full: spool }", sandbox: sandbox)
        let first = try start(sandbox)
        // With the sink down and 16 envelopes in memory, the source still gets every envelope
        // settled: the spool took them.
        await first.waitUntil("the source settled all \(total)") {
            (try? String(contentsOfFile: sandbox.path("source.state"), encoding: .utf8))?.hasPrefix("\(total)") == true
        }
        #expect(first.stop() == 0)
        #expect(collected(sandbox).isEmpty)
        #expect(RouteTotals.counter("spooled", route: "durable", in: first.standardError) == total, "\(first.standardError)")

        try FileManager.default.removeItem(atPath: down)
        let second = try start(sandbox)
        await second.waitUntil("every envelope collected") { collected(sandbox).count >= total }
        #expect(second.stop() == 0)
        let lines = collected(sandbox)
        #expect(lines.count == total)
        #expect(Set(lines.map(\.id)).count == total)
        for subject in ["s0", "s1"] {
            let numbers = lines.filter { $0.subject == subject }.compactMap { Int($0.id.dropFirst(2)) }
            #expect(numbers == numbers.sorted(), "subject \(subject) out of order")
        }
        #expect(RouteTotals.counter("loaded_from_spool", route: "durable", in: second.standardError) == total)
        #expect(RouteTotals.counter("spool_bytes", route: "durable", in: second.standardError) == 0)
    }
}
