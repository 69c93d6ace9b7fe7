import Foundation
import Testing

@testable import IntegrationSupport

/// `switchyard explain`: each step for one sample envelope, without starting anything.
@Suite(.timeLimit(.minutes(1)))
struct ExplainTests {
    static let routes = """
        instances:
          clock: { plugin: core, timer: { interval: 1s } }
          out:   { plugin: core, console: { format: body } }
          log:   { plugin: core, file: { path: "never-written.jsonl" } }
        routes:
          - name: early
            from: clock.tick
            when: "body.count <= 3"
            template: "tick {{body.count}}"
            to: out.print
          - name: journal
            from: clock.tick
            to: log.write
        iiideas:
          - id: note
            trigger: { port: clock.tick, when: "body.count > 1" }
            service: { piece: map, preferences: { map: { seen: "{{body.count}}" } } }
            action:  { port: log.write }
        """

    private static func explain(_ envelope: String, _ extra: [String] = [], in sandbox: Sandbox) throws -> (
        status: Int32, output: String, errors: String
    ) {
        try envelope.write(to: sandbox.root.appendingPathComponent("sample.json"), atomically: true, encoding: .utf8)
        return try RouterProcess.runToExit(
            ["explain", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--from", "clock.tick", "--envelope", "sample.json"]
                + extra,
            in: sandbox.root)
    }

    @Test func eachRouteShowsItsConditionWithTheValuesReadItsOutputAndItsSinks() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(Self.routes)
        let result = try Self.explain(#"{"body": {"count": 2}}"#, in: sandbox)
        #expect(result.status == 0, "\(result.errors)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "envelope: core.Tick from clock.tick")
        #expect(lines.contains("  when body.count <= 3 → true"), "\(result.output)")
        #expect(lines.contains("    body.count = 2"))
        #expect(lines.contains("  delivers text: tick 2"), "\(result.output)")
        #expect(lines.contains("  → out.print: takes it"))
        // The journal's sink checks the type's schema: this sample has no time.
        #expect(lines.contains("  → log.write: refuses: the body is not a core.Tick: time is required"), "\(result.output)")
        #expect(lines.contains("  service map"))
        #expect(lines.contains(#"  delivers json: {"seen":2}"#), "the iiidea's map runs: \(result.output)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.root.appendingPathComponent("never-written.jsonl").path))
    }

    @Test func aScriptRouteShowsEveryEnvelopeItSendsWhatItPrintedAndItsErrors() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1s } }
              out:   { plugin: core, console: { format: body } }
            routes:
              - name: split
                from: clock.tick
                script: |
                  print("count is", envelope.body.count)
                  if envelope.body.count > 5 then error("too many") end
                  for i = 1, envelope.body.count do emit { subject = "part/" .. i, body = "part " .. i, headers = { n = tostring(i) } } end
                to: out.print
            """)
        let result = try Self.explain(#"{"body": {"count": 2, "time": "2026-01-01T00:00:00Z"}}"#, in: sandbox)
        #expect(result.status == 0, "\(result.errors)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.contains("  script printed: count is\t2"), "\(result.output)")
        #expect(lines.contains("  delivers text [subject part/1]: part 1"), "\(result.output)")
        #expect(lines.contains("  delivers text [subject part/2]: part 2"), "\(result.output)")
        #expect(lines.contains("    headers: n=2"), "\(result.output)")
        let failing = try Self.explain(#"{"body": {"count": 9, "time": "2026-01-01T00:00:00Z"}}"#, ["--json"], in: sandbox)
        #expect(failing.status == 0, "\(failing.errors)")
        #expect(failing.output.contains(#""script_error":"error: "#), "\(failing.output)")
        #expect(failing.output.contains("main.yaml:9: too many"), "\(failing.output)")
    }

    @Test func aConditionThatFailsStopsTheRouteAndJSONSaysSo() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(Self.routes)
        let result = try Self.explain(#"{"body": {"count": 9, "time": "2026-11-25T00:00:00Z"}}"#, ["--json"], in: sandbox)
        #expect(result.status == 0, "\(result.errors)")
        let steps = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        #expect(steps.compactMap { $0["route"] as? String } == ["early", "journal", "iiidea note"])
        #expect(steps[0]["passes"] as? Bool == false)
        #expect(steps[0]["output"] == nil)
        #expect((steps[1]["sinks"] as? [[String: Any]])?.first?["takes"] as? Bool == true)
    }

    @Test func aPortThatIsNotASourceOrABadFileIsAnError() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(Self.routes)
        try "{}".write(to: sandbox.root.appendingPathComponent("sample.json"), atomically: true, encoding: .utf8)
        let notSource = try RouterProcess.runToExit(
            ["explain", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--from", "out.print", "--envelope", "sample.json"],
            in: sandbox.root)
        #expect(notSource.status == 1)
        #expect(notSource.errors.contains("out.print is not a source port of this graph"), "\(notSource.errors)")
        let unknown = try Self.explain(#"{"bdy": {}}"#, in: sandbox)
        #expect(unknown.status == 1)
        #expect(unknown.errors.contains("unknown field 'bdy'"), "\(unknown.errors)")
        // A missing file is a sentence with the system's reason, not a Foundation error dump.
        let missing = try RouterProcess.runToExit(
            ["explain", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--from", "clock.tick", "--envelope", "missing.json"],
            in: sandbox.root)
        #expect(missing.status == 1)
        #expect(missing.errors.contains("missing.json: cannot read it: No such file or directory"), "\(missing.errors)")
        #expect(!missing.errors.contains("NSCocoaErrorDomain"), "\(missing.errors)")
    }
}
