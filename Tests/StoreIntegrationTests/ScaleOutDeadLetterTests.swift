import Foundation
import Testing

@testable import IntegrationSupport

/// With `store.url`, each router hands its dead letters from its spool to PostgreSQL, so the
/// dead letters of every router are listed, replayed and dropped from any of them: through the
/// admin API, and with `switchyard dlq` given the store.
@Suite(.timeLimit(.minutes(2)))
struct ScaleOutDeadLetterTests {
    /// A router whose at-least-once route gives up on three envelopes while `sink-down` exists.
    private static func start(_ server: PostgresServer) async throws -> (router: RouterProcess, admin: String, sandbox: Sandbox) {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        #expect(FileManager.default.createFile(atPath: sandbox.path("sink-down"), contents: nil))
        try sandbox.writeRoutes(
            """
            spool: { path: "\(sandbox.path("state/spool.db"))" }
            store: { url: "${STORE_URL}" }
            instances:
              source: { plugin: testkit, numbers: { count: 3, state: "\(sandbox.path("source.state"))" } }
              sink:   { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", fail_while: "\(sandbox.path("sink-down"))" } }
            routes:
              - name: durable
                from: source.numbers
                to: sink.collect
                delivery: at-least-once
                retry: { attempts: 2, backoff: 5ms, max_backoff: 10ms }
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["STORE_URL": server.url])
        return (router, admin, sandbox)
    }

    private static func letters(at admin: String) -> [[String: Any]] {
        guard let answer = try? HTTPExchange.send("http://\(admin)/v1/dead-letters", method: "GET", headers: [:]), answer.status == 200,
            let list = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]]
        else { return [] }
        return list
    }

    @Test func deadLettersOfEitherRouterAreListedAndReplayedFromTheOther() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let first = try await Self.start(server)
        let second = try await Self.start(server)
        // Three from each router, all visible from the second.
        await second.router.waitUntil("six dead letters from the second router's API") { Self.letters(at: second.admin).count == 6 }
        let listed = Self.letters(at: second.admin)
        #expect(listed.allSatisfy { $0["route"] as? String == "durable" && $0["sink"] as? String == "sink.collect" }, "\(listed)")
        #expect(listed.allSatisfy { ($0["error"] as? String)?.contains("test sink down") == true }, "\(listed)")
        #expect(Self.letters(at: first.admin).count == 6)
        // Handed over, not copied: the spools keep none.
        for node in [first, second] {
            let local = try RouterProcess.runToExit(["dlq", "list", "--spool", node.sandbox.path("state/spool.db")], in: node.sandbox.root)
            #expect(local.status == 0 && local.output.isEmpty, "\(local)")
        }
        #expect(try server.psql("SELECT count(*) FROM dead_letters") == "6")
        // The CLI with the store sees every router's.
        let shared = try RouterProcess.runToExit(
            ["dlq", "list", "--spool", first.sandbox.path("state/spool.db")], in: first.sandbox.root,
            environment: ["SWITCHYARD_STORE_URL": server.url])
        #expect(shared.output.split(separator: "\n").count == 6, "\(shared)")

        // The second router's sink is back: replaying there delivers the first router's too.
        try FileManager.default.removeItem(atPath: second.sandbox.path("sink-down"))
        let replay = try HTTPExchange.send("http://\(second.admin)/v1/dead-letters/replay", method: "POST", headers: [:])
        let replayed = (try? JSONSerialization.jsonObject(with: Data(replay.body.utf8)) as? [String: Int])?["replayed"]
        #expect(replay.status == 200 && replayed == 6, "\(replay.body)")
        await second.router.waitUntil("six envelopes collected by the second router") {
            second.sandbox.lines(of: "collected.txt").count >= 6
        }
        #expect(second.sandbox.lines(of: "collected.txt").count == 6)
        #expect(first.sandbox.lines(of: "collected.txt").isEmpty)
        #expect(Self.letters(at: first.admin).isEmpty)
        #expect(try server.psql("SELECT count(*) FROM dead_letters") == "0")
        for node in [first, second] {
            #expect(node.router.stop() == 0, "\(node.router.standardError)")
            #expect(!node.router.standardError.contains(server.password))
        }
    }
}
