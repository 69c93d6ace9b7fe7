import Foundation
import Testing

@testable import IntegrationSupport

/// With `store.url`, an `exclusive: true` instance runs on one router at a time (a PostgreSQL
/// advisory lock); the others stand by and one takes over within seconds when the holder dies
/// or stops. What an at-least-once route sends a standing-by instance waits in that router's
/// spool and is delivered once it takes over.
@Suite(.timeLimit(.minutes(2)))
struct ScaleOutHoldTests {
    /// A router with an exclusive timer (`clock` → `ticks.jsonl`) and an exclusive sink fed
    /// at least once by three numbers of its own (`source` → `sink` → `collected.txt`).
    private static func start(_ server: PostgresServer, in existing: Sandbox? = nil, admin: Bool = false) async throws -> (
        RouterProcess, Sandbox
    ) {
        let sandbox = try existing ?? Sandbox()
        if existing == nil {
            for plugin in ["core", "testkit"] { try sandbox.installPlugin(plugin) }
            try sandbox.writeRoutes(
                """
                spool: { path: "\(sandbox.path("state/spool.db"))" }
                store: { url: "${STORE_URL}" }
                instances:
                  clock:  { plugin: core, exclusive: true, timer: { interval: 50ms } }
                  ticks:  { plugin: core, file: { path: "\(sandbox.path("ticks.jsonl"))" } }
                  source: { plugin: testkit, numbers: { count: 3, state: "\(sandbox.path("source.state"))" } }
                  sink:   { plugin: testkit, exclusive: true, collect: { path: "\(sandbox.path("collected.txt"))" } }
                routes:
                  - { name: ticking, from: clock.tick, to: ticks.write }
                  - { name: numbers, from: source.numbers, to: sink.collect, delivery: at-least-once }
                """)
        }
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path] + (admin ? ["--admin", "127.0.0.1:0"] : []), in: sandbox.root,
            environment: ["STORE_URL": server.url])
        if admin { await router.waitUntil("the admin port to listen") { router.adminAddress != nil } }
        return (router, sandbox)
    }

    @Test func oneRouterRunsAnExclusiveInstanceAndAnotherTakesOverWhenItDies() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        var (first, firstSandbox) = try await Self.start(server)
        await first.waitUntil("the first router to hold both") { first.occurrences(of: "it runs on this router") == 2 }
        await first.waitUntil("the first router's ticks and numbers") {
            firstSandbox.lines(of: "ticks.jsonl").count >= 3 && firstSandbox.lines(of: "collected.txt").count == 3
        }
        let (second, secondSandbox) = try await Self.start(server, admin: true)
        await second.waitUntil("the second router standing by") { second.occurrences(of: "standing by for its hold") == 2 }
        let instances = try HTTPExchange.send("http://\(second.adminAddress ?? "")/v1/instances").body
        let holds = (try JSONSerialization.jsonObject(with: Data(instances.utf8)) as? [[String: Any]] ?? []).compactMap { instance in
            (instance["hold"] as? String).map { "\(instance["name"] ?? ""): \($0)" }
        }
        #expect(holds.sorted() == ["clock: standing by", "sink: standing by"], "\(instances)")
        // Its numbers were accepted (at least once: into its spool) but wait for the sink.
        await second.waitUntil("the second router's numbers spooled") {
            (try? String(contentsOfFile: secondSandbox.path("source.state"), encoding: .utf8))?.hasPrefix("3") == true
        }
        let ticksThen = firstSandbox.lines(of: "ticks.jsonl").count
        await first.waitUntil("more ticks on the first router") { firstSandbox.lines(of: "ticks.jsonl").count >= ticksThen + 5 }
        #expect(secondSandbox.lines(of: "ticks.jsonl").isEmpty, "the clock runs on one router only")
        #expect(secondSandbox.lines(of: "collected.txt").isEmpty)

        // The holder dies: the other takes both over within seconds, and delivers what waited.
        _ = first.stop(signal: SIGKILL)
        await second.waitUntil("the second router to take both over", timeout: .seconds(10)) {
            second.occurrences(of: "it runs on this router") == 2
        }
        await second.waitUntil("the second router's ticks and its three numbers") {
            secondSandbox.lines(of: "ticks.jsonl").count >= 3 && secondSandbox.lines(of: "collected.txt").count == 3
        }

        // Back again, the first stands by; a graceful stop of the holder hands over at once.
        (first, _) = try await Self.start(server, in: firstSandbox)
        await first.waitUntil("the first router standing by") { first.occurrences(of: "standing by for its hold") == 2 }
        #expect(second.stop() == 0, "\(second.standardError)")
        await first.waitUntil("the first router to take over again", timeout: .seconds(10)) {
            first.occurrences(of: "it runs on this router") == 2
        }
        let ticksNow = firstSandbox.lines(of: "ticks.jsonl").count
        await first.waitUntil("the first router ticking again") { firstSandbox.lines(of: "ticks.jsonl").count > ticksNow }
        #expect(first.stop() == 0, "\(first.standardError)")
        for router in [first, second] { #expect(!router.standardError.contains(server.password)) }
    }

    /// A reload on a standing-by router replaces a changed exclusive instance without starting
    /// it (a plugin's reconfigure is for running instances); the new one waits for the hold.
    /// An instance made exclusive by a reload asks for its hold too.
    @Test func aReloadKeepsAStandingByInstanceStandingBy() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let (first, firstSandbox) = try await Self.start(server)
        await first.waitUntil("the first router to hold both") { first.occurrences(of: "it runs on this router") == 2 }
        let (second, secondSandbox) = try await Self.start(server)
        await second.waitUntil("the second router standing by") { second.occurrences(of: "standing by for its hold") == 2 }

        let routes = secondSandbox.routes.appendingPathComponent("main.yaml")
        let text = try String(contentsOf: routes, encoding: .utf8)
        try secondSandbox.writeRoutes(
            text.replacingOccurrences(of: "interval: 50ms", with: "interval: 40ms")
                .replacingOccurrences(of: "ticks:  { plugin: core,", with: "ticks:  { plugin: core, exclusive: true,"))
        // (The watch of the shared store reloads once when it first listens: count from here.)
        let reloads = second.occurrences(of: "routes reloaded")
        second.send(signal: SIGHUP)
        await second.waitUntil("the reload") { second.occurrences(of: "routes reloaded") > reloads }
        // The new clock goes on waiting on the request already made for its name; the file
        // sink, exclusive now, asks, and gets it (the first router's is not exclusive).
        await second.waitUntil("the sink's request") { second.occurrences(of: "standing by for its hold") == 3 }
        await second.waitUntil("the sink held here") { second.occurrences(of: "it runs on this router") == 1 }
        let ticksThen = firstSandbox.lines(of: "ticks.jsonl").count
        await first.waitUntil("more ticks on the first router") { firstSandbox.lines(of: "ticks.jsonl").count >= ticksThen + 5 }
        #expect(secondSandbox.lines(of: "ticks.jsonl").isEmpty, "the replaced clock stands by: \(second.standardError)")

        _ = first.stop(signal: SIGKILL)
        await second.waitUntil("the second router to take the clock and the sink over", timeout: .seconds(10)) {
            second.occurrences(of: "it runs on this router") == 3
        }
        await second.waitUntil("the second router ticking") { secondSandbox.lines(of: "ticks.jsonl").count >= 3 }
        #expect(second.stop() == 0, "\(second.standardError)")
    }
}
