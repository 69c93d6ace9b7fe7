import Foundation
import Testing

@testable import IntegrationSupport

/// With `store.url`, iiideas obtained from a template and the preferences people chose live in
/// PostgreSQL: a change made on one router is announced (NOTIFY) and every other router reloads,
/// so they all run the same iiideas.
@Suite(.timeLimit(.minutes(2)))
struct ScaleOutIiideaTests {
    private static func start(_ server: PostgresServer) async throws -> (router: RouterProcess, admin: String, sandbox: Sandbox) {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            spool: { path: "\(sandbox.path("state/spool.db"))" }
            store: { url: "${STORE_URL}" }
            instances:
              clock: { plugin: core, timer: { interval: 50ms } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiidea_templates:
              - id: note-ticks
                trigger: { port: clock.tick }
                service: { piece: template, preferences: { text: "tick {{body.count}}" } }
                action:  { port: out.write }
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["STORE_URL": server.url])
        return (router, admin, sandbox)
    }

    private static func cli(_ arguments: [String], _ node: (router: RouterProcess, admin: String, sandbox: Sandbox)) throws -> String {
        try RouterProcess.runToExit(["iiidea"] + arguments + ["--admin", node.admin], in: node.sandbox.root).output
    }

    private static func texts(_ sandbox: Sandbox) -> [String] {
        sandbox.lines(of: "out.jsonl").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["text"] as? String
        }
    }

    @Test func anIiideaObtainedOnOneRouterRunsOnEveryRouterWithTheSamePreferences() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let first = try await Self.start(server)
        let second = try await Self.start(server)
        #expect(
            try Self.cli(["obtain", "note-ticks", "--id", "shared", "--set", "service.text=one {{body.count}}"], first)
                == "obtained shared\n")
        await second.router.waitUntil("the second router to load it", timeout: .seconds(5)) {
            (try? Self.cli(["list"], second))?.hasPrefix("shared\tenabled") == true
        }
        await second.router.waitUntil("its notes on the second router") { Self.texts(second.sandbox).contains { $0.hasPrefix("one ") } }

        // Preferences changed on the second router reach the first.
        _ = try Self.cli(["preferences", "shared", "--set", "service.text=two {{body.count}}"], second)
        await first.router.waitUntil("the first router's notes with the new text", timeout: .seconds(10)) {
            Self.texts(first.sandbox).contains { $0.hasPrefix("two ") }
        }
        #expect(try server.psql("SELECT count(*) FROM iiidea_obtained") == "1")

        // Deleted on the first router: gone from the second.
        #expect(try Self.cli(["delete", "shared"], first) == "deleted shared\n")
        await second.router.waitUntil("the second router to drop it", timeout: .seconds(5)) {
            (try? Self.cli(["list"], second)) == ""
        }
        for node in [first, second] {
            #expect(node.router.stop() == 0, "\(node.router.standardError)")
            #expect(!node.router.standardError.contains(server.password))
        }
    }
}
