import Foundation
import Testing

@testable import IntegrationSupport

/// iiideas through the binary: trigger → service → action, run history, enable/disable over
/// the admin port and across restarts, the http piece against a local server, remote runs.
@Suite(.timeLimit(.minutes(2)))
struct IiideaTests {
    private static func start(_ sandbox: Sandbox) async throws -> (RouterProcess, String) {
        try await RouterProcess.startWithAdmin(sandbox, extra: ["--spool", sandbox.path("state.db")])
    }

    /// Runs `switchyard iiidea ARGS --admin ADDRESS` and returns its output; fails the test on a
    /// non-zero exit.
    private static func cli(_ arguments: [String], admin: String, in sandbox: Sandbox, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> String
    {
        let result = try RouterProcess.runToExit(["iiidea"] + arguments + ["--admin", admin], in: sandbox.root)
        #expect(result.status == 0, "\(arguments): \(result.errors)", sourceLocation: sourceLocation)
        return result.output
    }

    private static func runs(_ id: String, admin: String, in sandbox: Sandbox) throws -> [[String: Any]] {
        let text = try cli(["runs", id, "--json", "--limit", "100"], admin: admin, in: sandbox)
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]]) ?? []
    }

    /// The runs of `id` that have ended so far (none while the admin port does not answer).
    private static func endedRuns(_ id: String, admin: String, in sandbox: Sandbox) -> [[String: Any]] {
        ((try? runs(id, admin: admin, in: sandbox)) ?? []).filter { $0["ended_piece"] != nil }
    }

    /// Waits (saying `what`) until the ended runs of `id` satisfy `done`; those runs.
    private static func waitForEndedRuns(
        _ id: String, _ what: String, of router: RouterProcess, admin: String, in sandbox: Sandbox,
        sourceLocation: SourceLocation = #_sourceLocation, until done: ([[String: Any]]) -> Bool
    ) async -> [[String: Any]] {
        var ended: [[String: Any]] = []
        await router.waitUntil(what, sourceLocation: sourceLocation) {
            ended = endedRuns(id, admin: admin, in: sandbox)
            return done(ended)
        }
        return ended
    }

    @Test func aChainRunsEndToEndAndIsRecorded() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms, count: 3 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            iiideas:
              - id: tick-note
                title: Notes every tick after the first
                trigger: { port: clock.tick, when: "body.count > 1" }
                service: { piece: template, preferences: { text: "tick {{body.count}}" } }
                action:  { port: out.write, preferences: { note: "got {{body.text}}" } }
            """
        )
        let (router, admin) = try await Self.start(sandbox)
        await router.waitUntil("two actions written") { sandbox.lines(of: "out.jsonl").count >= 2 }
        let finished = await Self.waitForEndedRuns("tick-note", "two runs recorded as ended", of: router, admin: admin, in: sandbox) {
            $0.count == 2
        }
        let written = try sandbox.jsonLines(of: "out.jsonl")
        #expect(written.compactMap { ($0["body"] as? [String: Any])?["text"] as? String } == ["tick 2", "tick 3"])
        let headers = try #require(written.first?["headers"] as? [String: String])
        #expect(headers["iiidea.id"] == "tick-note")
        #expect(headers["iiidea.preferences"] == "{\"note\":\"got tick 2\"}")
        #expect(finished.allSatisfy { $0["ended_piece"] as? String == "action" && $0["error"] == nil })
        #expect(finished.compactMap { ($0["output"] as? [String: Any])?["text"] as? String } == ["tick 3", "tick 2"])
        #expect(
            Set(finished.compactMap { $0["run_id"] as? String })
                == Set(written.compactMap { ($0["headers"] as? [String: String])?["iiidea.run"] }))
        let list = try Self.cli(["list"], admin: admin, in: sandbox)
        #expect(list == "tick-note\tenabled\tclock.tick\ttemplate\tout.write\tNotes every tick after the first\n")
        #expect(router.stop() == 0)
    }

    @Test func aFailingServiceEndsTheRunThereAndTheActionDoesNotRun() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              # Five ticks: a single early one could come before the iiidea is active.
              clock: { plugin: core, timer: { interval: 100ms, count: 5 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            iiideas:
              - id: unreachable
                trigger: { port: clock.tick }
                service: { piece: http, preferences: { url: "http://127.0.0.1:1/nothing", timeout: 500ms, allow_private: true } }
                action:  { port: out.write }
            """
        )
        let (router, admin) = try await Self.start(sandbox)
        let runs = await Self.waitForEndedRuns("unreachable", "the failed run", of: router, admin: admin, in: sandbox) { !$0.isEmpty }
        #expect(runs.first?["ended_piece"] as? String == "service")
        #expect((runs.first?["error"] as? String)?.contains("127.0.0.1:1") == true, "\(runs)")
        #expect(sandbox.lines(of: "out.jsonl").isEmpty)
        #expect(router.stop() == 0)
    }

    @Test func aScriptServicePieceComputesTheActionsInputAndItsErrorEndsTheRunAtTheService() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms, count: 3 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            iiideas:
              - id: squares
                trigger: { port: clock.tick }
                service:
                  piece: script
                  preferences:
                    source: |
                      local n = envelope.body.count
                      if n == 2 then error("two is not square enough") end
                      state.total = (state.total or 0) + n * n
                      return { body = { square = n * n, total = state.total } }
                action:  { port: out.write }
            """
        )
        let (router, admin) = try await Self.start(sandbox)
        let finished = await Self.waitForEndedRuns("squares", "three runs ended", of: router, admin: admin, in: sandbox) { $0.count == 3 }
        let written = try sandbox.jsonLines(of: "out.jsonl").compactMap { $0["body"] as? [String: Any] }
        #expect(written.map { $0["square"] as? Int } == [1, 9])
        #expect(written.map { $0["total"] as? Int } == [1, 10])
        let failed = try #require(finished.first { $0["ended_piece"] as? String == "service" }, "\(finished)")
        #expect((failed["error"] as? String)?.contains("main.yaml:12: two is not square enough") == true, "\(failed)")
        #expect(router.stop() == 0)
    }

    @Test func theHTTPPieceCallsALocalServerAndPassesItsJSONOn() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        // A real HTTP server: answers every POST with the JSON it got, wrapped, and logs it.
        let server = try HTTPEchoServer(in: sandbox)
        defer { server.stop() }
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms, count: 2 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiideas:
              - id: ask
                trigger: { port: clock.tick }
                service:
                  piece: http
                  preferences:
                    method: POST
                    allow_private: true
                    url: "http://127.0.0.1:\(server.port)/echo/{{body.count}}"
                    headers: { X-Test: "tick {{body.count}}" }
                    body: { n: "{{body.count}}" }
                action: { port: out.write }
            """
        )
        let (router, _) = try await Self.start(sandbox)
        await router.waitUntil("two answers written") { sandbox.lines(of: "out.jsonl").count >= 2 }
        #expect(router.stop() == 0)
        let answers = sandbox.lines(of: "out.jsonl")
        #expect(
            answers == [#"{"got":{"n":1},"header":"tick 1","path":"/echo/1"}"#, #"{"got":{"n":2},"header":"tick 2","path":"/echo/2"}"#])
    }

    /// Writes a route file with iiidea `id`: five ticks of `clock` (one every `interval`), each
    /// waiting `duration` in a delay before it goes to the file `out.jsonl`.
    private static func writeDelayIiidea(
        _ id: String, lasting duration: String, tickingEvery interval: String = "100ms", in sandbox: Sandbox, extraInstance: String = ""
    ) throws {
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: \(interval), count: 5 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
              \(extraInstance)
            iiideas:
              - id: \(id)
                trigger: { port: clock.tick }
                service: { piece: delay, preferences: { duration: \(duration) } }
                action:  { port: out.write }
            """
        )
    }

    /// Waits until iiidea `id` has one run recorded (started, not necessarily ended).
    private static func waitForARun(_ id: String, of router: RouterProcess, admin: String, in sandbox: Sandbox) async {
        await router.waitUntil("a run of \(id) under way") { ((try? runs(id, admin: admin, in: sandbox)) ?? []).count == 1 }
    }

    @Test func aStoppingRouterEndsADelayAfterItsDrainAndRecordsTheRun() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try Self.writeDelayIiidea("later", lasting: "1h", in: sandbox)
        let arguments = ["--spool", sandbox.path("state.db"), "--drain-timeout", "200ms"]
        var (router, admin) = try await RouterProcess.startWithAdmin(sandbox, extra: arguments)
        await Self.waitForARun("later", of: router, admin: admin, in: sandbox)
        // The drain gives up on the run waiting in the delay (exit 3: the drain timed out);
        // closing the route then ends the wait, so the run is recorded as ended, where it
        // used to sleep on, unrecorded, until the process exited.
        #expect(router.stop() == 3)
        try Self.writeDelayIiidea("later", lasting: "1h", tickingEvery: "1h", in: sandbox)
        (router, admin) = try await RouterProcess.startWithAdmin(sandbox, extra: arguments)
        let ended = Self.endedRuns("later", admin: admin, in: sandbox)
        #expect(ended.first?["ended_piece"] as? String == "service", "\(ended)")
        #expect((ended.first?["error"] as? String)?.contains("the router stopped during the delay") == true, "\(ended)")
        #expect(sandbox.lines(of: "out.jsonl").isEmpty)
        #expect(router.stop() == 0)
    }

    @Test func aReloadLetsADelayRunItsCourse() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try Self.writeDelayIiidea("soon", lasting: "1500ms", in: sandbox)
        let (router, admin) = try await Self.start(sandbox)
        await Self.waitForARun("soon", of: router, admin: admin, in: sandbox)
        // A reload that adds an instance retires and replaces the iiidea's route; the run in
        // its delay still finishes, through the old route's worker.
        try Self.writeDelayIiidea(
            "soon", lasting: "1500ms", in: sandbox,
            extraInstance: "extra: { plugin: core, file: { path: \"\(sandbox.path("extra.jsonl"))\" } }")
        let reload = try RouterProcess.runToExit(["reload", "--admin", admin], in: sandbox.root)
        #expect(reload.status == 0, "\(reload.output)\n\(reload.errors)")
        let ended = await Self.waitForEndedRuns("soon", "the first run ended", of: router, admin: admin, in: sandbox) { !$0.isEmpty }
        #expect(ended.last?["ended_piece"] as? String == "action", "\(ended)")
        #expect(ended.last?["error"] == nil, "\(ended)")
        // Runs still queue behind 1.5 s delays: no drain to wait for here.
        router.stop(signal: SIGKILL)
    }

    @Test func disablingStopsRunsAndSurvivesARestartAndHistoryIsBounded() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            iiidea_history: { keep: 3 }
            instances:
              clock: { plugin: core, timer: { interval: 100ms } }
              ticks: { plugin: core, file: { path: "\(sandbox.path("ticks.jsonl"))" } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { from: clock.tick, to: ticks.write }
            iiideas:
              - { id: every, trigger: { port: clock.tick }, service: { piece: pass }, action: { port: out.write } }
            """
        )
        var (router, admin) = try await Self.start(sandbox)
        await router.waitUntil("six actions") { sandbox.lines(of: "out.jsonl").count >= 6 }
        #expect(try Self.runs("every", admin: admin, in: sandbox).count == 3, "history keeps 3 runs")
        #expect(try Self.cli(["disable", "every"], admin: admin, in: sandbox) == "disabled every\n")
        let actionsAtDisable = sandbox.lines(of: "out.jsonl").count
        let ticksAtDisable = sandbox.lines(of: "ticks.jsonl").count
        await router.waitUntil("ten more ticks") { sandbox.lines(of: "ticks.jsonl").count >= ticksAtDisable + 10 }
        // At most the run already under way when the switch flipped.
        #expect(sandbox.lines(of: "out.jsonl").count <= actionsAtDisable + 1)
        #expect(router.stop() == 0)

        (router, admin) = try await Self.start(sandbox)
        #expect(try Self.cli(["list"], admin: admin, in: sandbox).hasPrefix("every\tdisabled\t"), "the choice survives the restart")
        let actionsAfterRestart = sandbox.lines(of: "out.jsonl").count
        let ticksAfterRestart = sandbox.lines(of: "ticks.jsonl").count
        await router.waitUntil("ten ticks after the restart") { sandbox.lines(of: "ticks.jsonl").count >= ticksAfterRestart + 10 }
        #expect(sandbox.lines(of: "out.jsonl").count == actionsAfterRestart)
        #expect(try Self.cli(["enable", "every"], admin: admin, in: sandbox) == "enabled every\n")
        await router.waitUntil("actions again") { sandbox.lines(of: "out.jsonl").count >= actionsAfterRestart + 3 }
        let unknown = try RouterProcess.runToExit(["iiidea", "enable", "nope", "--admin", admin], in: sandbox.root)
        #expect(unknown.status == 1)
        #expect(unknown.errors.contains("iiidea 'nope': there is no iiidea with this id"), "\(unknown.errors)")
        #expect(router.stop() == 0)
    }

    @Test func aPieceThatRefusesToEnableLeavesTheIiideaInactiveWithItsReason() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 100ms } }
              sink:  { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))" } }
            iiideas:
              - id: refused
                trigger: { port: clock.tick }
                service: { piece: pass }
                action:  { port: sink.collect, preferences: { refuse: "no permission to write" } }
              - id: accepted
                trigger: { port: clock.tick }
                service: { piece: pass }
                action:  { port: sink.collect, preferences: { folder: inbox } }
            """
        )
        let (router, admin) = try await Self.start(sandbox)
        await router.waitUntil("runs of the accepted iiidea") { sandbox.lines(of: "collected.txt").count >= 3 }
        let list = try Self.cli(["list"], admin: admin, in: sandbox).split(separator: "\n")
        #expect(
            list.contains("refused\tinactive (sink.collect refused: no permission to write)\tclock.tick\tpass\tsink.collect\t"), "\(list)")
        #expect(list.contains("accepted\tenabled\tclock.tick\tpass\tsink.collect\t"))
        #expect(try Self.runs("refused", admin: admin, in: sandbox).isEmpty)
        #expect(
            try Self.cli(["enable", "refused"], admin: admin, in: sandbox)
                == "enabled refused, but inactive: sink.collect refused: no permission to write\n")
        #expect(try Self.cli(["disable", "accepted"], admin: admin, in: sandbox) == "disabled accepted\n")
        await router.waitUntil("the piece told it was disabled") { router.standardError.contains("piece collect disabled for accepted") }
        #expect(router.logged("piece collect enabled for accepted"))
        #expect(router.stop() == 0)
    }

    @Test func aPluginServicePieceRunsOverTheABIAndItsFailureEndsTheRun() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms, count: 2 } }
              kit:   { plugin: testkit }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiideas:
              - { id: doubled, trigger: { port: clock.tick }, service: { piece: kit.double }, action: { port: out.write } }
              - id: broken
                trigger: { port: clock.tick }
                service: { piece: kit.double, preferences: { fail: "the far side said no" } }
                action: { port: out.write }
            """
        )
        let (router, admin) = try await Self.start(sandbox)
        let failed = await Self.waitForEndedRuns("broken", "two doubled outputs and two failed runs", of: router, admin: admin, in: sandbox)
        { sandbox.lines(of: "out.jsonl").count == 2 && $0.count == 2 }
        #expect(sandbox.lines(of: "out.jsonl") == [#"{"doubled":2}"#, #"{"doubled":4}"#])
        #expect(failed.allSatisfy { $0["ended_piece"] as? String == "service" && $0["error"] as? String == "the far side said no" })
        #expect(router.stop() == 0)
    }

    /// A broker and a sandbox whose routes have a timer, an MQTT instance subscribed to `push/#`
    /// (client id `remote-runs`, the remote port `push.messages`), a file `out` and `iiideas`.
    static func remoteRuns(_ iiideas: String) throws -> (Mosquitto, Sandbox) {
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("mqtt")
        try sandbox.writeRoutes(
            """
            instances:
              clock:  { plugin: core, timer: { interval: 1h } }
              push:   { plugin: mqtt, url: "\(broker.url)", client_id: remote-runs, subscriptions: [ { topic: "push/#", qos: 1 } ] }
              out:    { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiideas:
            \(iiideas)
            """)
        return (broker, sandbox)
    }

    @Test func aMessageNamingTheIiideaRunsItRemotelyWithItsData() async throws {
        let (broker, sandbox) = try Self.remoteRuns(
            """
              - id: note
                trigger: { port: clock.tick }
                service: { piece: template, preferences: { text: "remote {{body.count}}" } }
                action:  { port: out.write }
                remote:  { port: push.messages }
            """)
        let (router, admin) = try await Self.start(sandbox)
        broker.waitForLog("Sending SUBACK to remote-runs")
        try broker.publish(topic: "push/a", message: #"{"notification_id":"other","data":{"count":1}}"#, qos: 1)
        try broker.publish(topic: "push/a", message: #"{"notification_id":"note","data":{"count":42}}"#, qos: 1)
        await router.waitUntil("the remote run's action") { !sandbox.lines(of: "out.jsonl").isEmpty }
        #expect(sandbox.lines(of: "out.jsonl") == [#"{"text":"remote 42"}"#])
        _ = await Self.waitForEndedRuns("note", "the run recorded", of: router, admin: admin, in: sandbox) { $0.count == 1 }
        #expect(router.stop() == 0)
    }

    @Test func anOwnedIiideaRunsRemotelyOnlyForItsOwnerAndListsFilterByOwner() async throws {
        let (broker, sandbox) = try Self.remoteRuns(
            """
              - id: alices
                owner: alice
                trigger: { port: clock.tick }
                service: { piece: template, preferences: { text: "for alice: {{body.count}}" } }
                action:  { port: out.write }
                remote:  { port: push.messages }
              - id: anyones
                trigger: { port: clock.tick }
                service: { piece: pass }
                action:  { port: out.write }
            """)
        let (router, admin) = try await Self.start(sandbox)
        broker.waitForLog("Sending SUBACK to remote-runs")
        // Naming the iiidea is not enough: the message must name its owner.
        try broker.publish(topic: "push/a", message: #"{"notification_id":"alices","data":{"owner":"bob","count":1}}"#, qos: 1)
        try broker.publish(topic: "push/a", message: #"{"notification_id":"alices","data":{"count":2}}"#, qos: 1)
        try broker.publish(topic: "push/a", message: #"{"notification_id":"alices","data":{"owner":"alice","count":3}}"#, qos: 1)
        await router.waitUntil("the owner's remote run") { !sandbox.lines(of: "out.jsonl").isEmpty }
        #expect(sandbox.lines(of: "out.jsonl") == [#"{"text":"for alice: 3"}"#])

        let owned = try Self.cli(["list", "--owner", "alice"], admin: admin, in: sandbox).split(separator: "\n")
        #expect(owned.map { $0.split(separator: "\t").first.map(String.init) } == ["alices"], "\(owned)")
        let all = try Self.cli(["list"], admin: admin, in: sandbox).split(separator: "\n")
        #expect(all.count == 2)
        let listed = try HTTPExchange.send("http://" + admin + "/v1/iiideas?owner=alice")
        #expect(listed.body.contains(#""owner":"alice""#) && !listed.body.contains("anyones"), "\(listed.body)")
        #expect(router.stop() == 0)
    }
}

/// A real HTTP server for the http piece, in Python's standard library: answers each POST with
/// `{"got": <request JSON>, "header": <X-Test>, "path": <path>}`.
final class HTTPEchoServer {
    private let server: PythonServer
    var port: Int { server.port }

    init(in sandbox: Sandbox) throws {
        let portFile = sandbox.path("echo.port")
        let script = """
            import http.server, json, os, sys
            class Echo(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    got = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                    body = json.dumps({'got': got, 'header': self.headers['X-Test'], 'path': self.path}).encode()
                    self.send_response(200)
                    self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *args):
                    pass
            server = http.server.HTTPServer(('127.0.0.1', 0), Echo)
            with open(sys.argv[1] + '.tmp', 'w') as f:
                f.write('%d %d' % (server.server_address[1], os.getpid()))
            os.rename(sys.argv[1] + '.tmp', sys.argv[1])
            server.serve_forever()
            """
        server = try PythonServer(arguments: ["-c", script, portFile], portFile: portFile, what: "the HTTP echo server")
    }

    func stop() { server.stop() }
}
