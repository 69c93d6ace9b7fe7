import Foundation
import Testing

@testable import IntegrationSupport

/// SIGTERM stops the sources, drains what the routes accepted and exits cleanly.
@Suite(.timeLimit(.minutes(2)))
struct ShutdownTests {
    @Test func anInstanceThatFailsToStartEndsTheRunCleanly() throws {
        // The timer is running (and emitting) when the sip instance cannot bind: the router
        // stops what started and exits 1, and nothing calls into a freed router.
        let sandbox = try Sandbox(plugins: ["core", "sip"])
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1ms } }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.org" }
                listen: { host: 192.0.2.1, port: 5060 }
            routes:
              - { from: clock.tick, to: out.write }
            """)
        let result = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1, "\(result.errors)")
        #expect(result.errors.contains("error: instance 'pager': start failed: sip: cannot listen on 192.0.2.1:5060"), "\(result.errors)")
        #expect(!result.errors.contains("Fatal error"), "\(result.errors)")
    }

    /// A second SIGTERM while the drain waits stops the router at once, with status 143
    /// (128 + SIGTERM), and says what that costs (issue 34).
    @Test func aSecondSigtermDuringTheDrainStopsAtOnce() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms } }
              slow: { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", delay_ms: 600000, max_in_flight: 1 } }
              seen: { plugin: core, file: { path: "\(sandbox.path("seen.jsonl"))" } }
            routes:
              - { from: clock.tick, to: slow.collect }
              - { from: clock.tick, to: seen.write }
            """)
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--drain-timeout", "10m"], in: sandbox.root)
        // Two ticks seen: the slow sink holds the first for ten minutes, so the drain waits.
        await router.waitUntil("ticks the slow sink holds") { sandbox.lines(of: "seen.jsonl").count >= 2 }
        kill(router.process.processIdentifier, SIGTERM)
        await router.waitUntil("the drain to begin") { router.standardError.contains("a second SIGINT or SIGTERM stops at once") }
        // The drain says what it waits for: the slow sink's unacknowledged delivery.
        await router.waitUntil("the drain to say what it waits for") {
            router.standardError.contains("draining: waiting for what is queued and unacknowledged")
        }
        #expect(router.logged("instance 'slow': 1 unacknowledged"), "\(router.standardError)")
        let status = router.stop(signal: SIGTERM, timeout: .seconds(20))
        #expect(status == 143, "\(router.standardError)")
        #expect(router.logged("second SIGTERM during the drain: stopping at once"), "\(router.standardError)")
    }

    /// `run --exit-when-done`: a timer with a count and standard input at its end are finite
    /// sources; once both are done and everything was delivered, the router stops by itself.
    @Test func exitWhenDoneStopsOnceEveryFiniteSourceIsDoneAndDelivered() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 5ms, count: 50 } }
              input: { plugin: core, console: {} }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { from: clock.tick, to: out.write }
              - { from: input.lines, to: out.write }
            """)
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--exit-when-done"], in: sandbox.root)
        router.send("first line\nlast line\n")
        // Standard input still open: the console source is not done, so the router runs on.
        await router.waitUntil("the timer done") { router.standardError.contains("instance=clock port=tick") }
        #expect(router.process.isRunning)
        router.closeInput()
        #expect(router.waitForExit(timeout: .seconds(30)) == 0, "\(router.standardError)")
        #expect(router.logged("every source is done and everything it sent was delivered"))
        #expect(sandbox.lines(of: "out.jsonl").count == 52)
    }

    /// A signal while the route files load (here a plugin's describe that hangs) stops the
    /// process at once, saying so: nothing was started yet.
    @Test func aSignalWhileLoadingStopsAtOnce() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        let fifo = sandbox.path("hang")
        #expect(mkfifo(fifo, 0o600) == 0)
        try sandbox.writeRoutes(
            """
            instances:
              slow: { plugin: testkit, describe_blocks_on: { path: "\(fifo)" } }
            """)
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        // The plugins are loaded: the instances are being described, and the describe hangs.
        await router.waitUntil("the plugins loaded") { router.standardError.contains("loaded plugin") }
        kill(router.process.processIdentifier, SIGTERM)
        #expect(router.waitForExit(timeout: .seconds(5)) == 143, "\(router.standardError)")
        #expect(router.logged("SIGTERM while loading the route files: stopping (nothing was started)"))
    }

    /// `run` raises its soft open-file limit to the hard one and logs both (a shell hands
    /// down 1024; a few hundred slow clients would use it up).
    @Test func runRaisesItsOpenFileLimit() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes("instances:\n  clock: { plugin: core, timer: { interval: 1h } }\n")
        var hard = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &hard)
        try #require(hard.rlim_max > 256, "a hard limit above 256 to raise to")
        // The soft limit is lowered for the router alone (prlimit on the shell that starts it).
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root,
            environment: [:], fileLimit: (256, nil))
        await router.waitUntil("the router started") { router.standardError.contains("router started") }
        #expect(router.logged("from=256"), "\(router.standardError)")
        #expect(router.logged("to=\(hard.rlim_max)"), "\(router.standardError)")
        #expect(router.stop() == 0)
    }

    @Test func sigtermDrainsEverythingAccepted() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1ms, count: 1000000 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: flood
                from: clock.tick
                to: out.write
                queue: { size: 100000 }
            """
        )
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("200 lines in out.jsonl") { sandbox.lines(of: "out.jsonl").count >= 200 }
        #expect(router.stop(signal: SIGTERM) == 0)
        let log = router.standardError
        #expect(log.contains("signal=SIGTERM"))
        #expect(log.split(separator: "\n").contains { $0.contains("router stopped") && $0.contains("drained=true") }, "\(log)")
        let totals = try #require(RouteTotals.parse(route: "flood", in: log), "\(log)")
        let lines = sandbox.lines(of: "out.jsonl")
        #expect(lines.count >= 200)
        #expect(lines.count == totals.received)
        #expect(totals.delivered == totals.received)
        #expect(totals.droppedFull == 0)
        // Every line is a whole envelope and the ticks are consecutive: nothing lost or torn.
        let ticks = try sandbox.jsonLines(of: "out.jsonl").compactMap { ($0["body"] as? [String: Any])?["count"] as? Int }
        #expect(ticks == Array(1...max(1, lines.count)))
    }

    @Test func sigtermWithADeepQueueDeliversTheBacklogBeforeExiting() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              keyboard: { plugin: core, console: {} }
              out:      { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            routes:
              - name: backlog
                from: keyboard.lines
                to: out.write
                queue: { size: 100000 }
            """
        )
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        let total = 30_000
        router.send((1...total).map { "line \($0)\n" }.joined())
        await router.waitUntil("the first line written") { !sandbox.lines(of: "out.jsonl").isEmpty }
        let writtenAtSignal = sandbox.lines(of: "out.jsonl").count
        #expect(router.stop(signal: SIGTERM) == 0)
        let totals = try #require(RouteTotals.parse(route: "backlog", in: router.standardError), "\(router.standardError)")
        let lines = sandbox.lines(of: "out.jsonl")
        // What was queued when the signal came was still written, in order, and nothing else.
        #expect(totals.received > writtenAtSignal)
        #expect(lines.count == totals.received)
        #expect(lines == (1...max(1, totals.received)).map { "\"line \($0)\"" })
    }
}
