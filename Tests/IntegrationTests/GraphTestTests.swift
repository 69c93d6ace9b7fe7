import Foundation
import Testing

@testable import IntegrationSupport

/// `switchyard test`: YAML cases run against the real router with stand-ins for every plugin
/// instance — passing, failing on purpose with the expected diff, and wrong test files.
@Suite(.timeLimit(.minutes(1)))
struct GraphTestTests {
    /// A clock, a console, a file, a testkit service piece: the stand-ins take the place of all.
    static let routes = """
        instances:
          clock: { plugin: core, timer: { interval: 1h } }
          out:   { plugin: core, console: { format: body } }
          log:   { plugin: core, file: { path: "never-written.jsonl" } }
          kit:   { plugin: testkit }
        routes:
          - name: early
            from: clock.tick
            when: "body.count <= 3"
            template: "tick {{body.count}}"
            to: out.print
          - name: durable
            from: clock.tick
            delivery: at-least-once
            retry: { attempts: 2, backoff: 10ms }
            to: log.write
          - name: counted
            from: clock.tick
            when: "body.count == 5"
            map: { n: "{{body.time}}" }
            type: demo.Count
            to: log.write
        iiideas:
          - { id: doubled, trigger: { port: clock.tick }, service: { piece: kit.double }, action: { port: out.print } }
          - id: noted
            trigger: { port: clock.tick, when: "body.count > 1" }
            service: { piece: map, preferences: { map: { seen: "{{body.count}}" } } }
            action: { port: log.write }
            enabled: false
        types:
          - name: demo.Count
            schema: { type: object, properties: { n: { type: integer } }, required: [n] }
        """

    private static func sandbox(tests: String) throws -> Sandbox {
        let sandbox = try Sandbox(plugins: ["core", "testkit"])
        try sandbox.writeRoutes(routes)
        try FileManager.default.createDirectory(at: sandbox.routes.appendingPathComponent("tests"), withIntermediateDirectories: true)
        try tests.write(to: sandbox.routes.appendingPathComponent("tests/graph.yaml"), atomically: true, encoding: .utf8)
        return sandbox
    }

    private static func test(_ sandbox: Sandbox, _ extra: [String] = []) throws -> (status: Int32, output: String, errors: String) {
        try RouterProcess.runToExit(["test", "routes/tests", "--plugins", sandbox.plugins.path] + extra, in: sandbox.root)
    }

    @Test func passingCasesRunTheRoutesIiideasAndDeadLettersOffline() throws {
        let sandbox = try Self.sandbox(
            tests: """
                tests:
                  - name: an early tick
                    input:
                      - port: clock.tick
                        body: { count: 2, time: "2026-11-25T10:00:00Z" }
                    expect:
                      out.print:
                        - { body: "tick 2" }
                        - { headers: { iiidea.id: doubled }, body: { count: 2, time: "2026-11-25T10:00:00Z" } }
                      log.write:
                        - { type: core.Tick, body_contains: { count: 2 } }
                  - name: the service piece answers as told, a disabled iiidea is enabled
                    enable: [noted]
                    services: { kit.double: { doubled: 8 } }
                    input:
                      - { port: clock.tick, body: { count: 4, time: "2026-11-25T10:00:04Z" } }
                    order: any
                    expect:
                      out.print:
                        - { when: "body.doubled == 8" }
                      log.write:
                        - { body: { seen: 4 } }
                        - { when: "body.count == 4" }
                  - name: a rejecting sink makes a dead letter
                    sinks: { log.write: reject }
                    input:
                      - { port: clock.tick, body: { count: 9, time: "2026-11-25T10:00:09Z" } }
                    expect:
                      out.print: [ { body_contains: { count: 9 } } ]
                    dead_letters: { durable: 1 }
                """)
        let result = try Self.test(sandbox, ["--junit", "report.xml"])
        #expect(result.status == 0, "\(result.output)\n\(result.errors)")
        #expect(result.output.contains("  PASS an early tick ("), "\(result.output)")
        #expect(result.output.contains("  PASS a rejecting sink makes a dead letter ("), "\(result.output)")
        #expect(result.output.contains("3 passed, 0 failed (1 file)"), "\(result.output)")
        // The stand-ins ran instead of the plugins: the file sink never wrote.
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("never-written.jsonl")))
        let report = try String(contentsOfFile: sandbox.path("report.xml"), encoding: .utf8)
        #expect(report.contains(#"<testsuites name="switchyard test" tests="3" failures="0" errors="0">"#), "\(report)")
        // A filter: only the matching case runs; one that matches nothing fails (issue 34).
        let filtered = try Self.test(sandbox, ["--filter", "early"])
        #expect(filtered.status == 0 && filtered.output.contains("1 passed, 0 failed"), "\(filtered.output)")
        let none = try Self.test(sandbox, ["--filter", "no such case"])
        #expect(none.status == 1)
        #expect(none.errors.contains("no test case's name contains 'no such case'"), "\(none.errors)")
    }

    @Test func aFailingCasePrintsTheDiffAndExitsNonZero() throws {
        let sandbox = try Self.sandbox(
            tests: """
                tests:
                  - name: wrong on purpose
                    disable: [doubled]
                    input:
                      - { port: clock.tick, body: { count: 2, time: "2026-11-25T10:00:00Z" } }
                      - { port: clock.tick, body: { count: 7, time: "2026-11-25T10:00:07Z" } }
                    expect:
                      out.print:
                        - { body: "tick 3" }
                        - { body: "tick 7" }
                      log.write:
                        - { body_contains: { count: 2 } }
                        - { when: "body.count > 7" }
                """)
        let result = try Self.test(sandbox, ["--junit", "report.xml"])
        #expect(result.status == 1)
        let file = "routes/tests/graph.yaml"
        let expected = "  FAIL wrong on purpose (\(file):2:5, "
        #expect(result.output.contains(expected), "\(result.output)")
        let diff = """
                out.print (\(file):8:7): expected 2 envelopes, got 1 envelope
                  #1 (expected at \(file):9:11), from input #1:
                    body differs:
                      - expected: "tick 3"
                      + got:      "tick 2"
                    got: text "tick 2"
                  #2 missing: nothing arrived for the envelope expected at \(file):10:11
                log.write (\(file):11:7):
                  #2 (expected at \(file):13:11), from input #2:
                    when body.count > 7 is false (body.count = 7)
                    got: core.Tick {"count":7,"time":"2026-11-25T10:00:07Z"}
            0 passed, 1 failed (1 file)

            """
        #expect(result.output.hasSuffix(diff), "\(result.output)")
        let report = try String(contentsOfFile: sandbox.path("report.xml"), encoding: .utf8)
        #expect(report.contains(#"<testcase name="wrong on purpose" classname="routes/tests/graph.yaml""#), "\(report)")
        #expect(report.contains("<failure message=\"out.print (\(file):8:7): expected 2 envelopes, got 1 envelope\">"), "\(report)")
    }

    @Test func anEnvelopeASinkSchemaRefusesOrABadInputFailsUnlessExpected() throws {
        let sandbox = try Self.sandbox(
            tests: """
                tests:
                  - name: a tick without its time
                    input:
                      - { port: clock.tick, body: { count: 2 } }
                    expect:
                      out.print: []
                  - name: a map the sink's schema refuses
                    input:
                      - { port: clock.tick, body: { count: 5, time: "2026-11-25T10:00:05Z" } }
                    expect:
                      out.print: [ { type: json } ]
                  - name: the refusal expected
                    input:
                      - { port: clock.tick, body: { count: 5, time: "2026-11-25T10:00:05Z" } }
                    order: any
                    expect:
                      log.write:
                        - { type: core.Tick }
                        - { refused: "not a demo.Count" }
                """)
        let result = try Self.test(sandbox)
        #expect(result.status == 1)
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(
            lines.contains(
                "    input #1 (routes/tests/graph.yaml:4:9): clock.tick would not emit this envelope: the body is not a core.Tick: time is required"
            ), "\(result.output)")
        #expect(
            lines.contains("    log.write refused an envelope of input #1: the body is not a demo.Count: n expected integer, found string"),
            "\(result.output)")
        #expect(lines.contains(#"      got: demo.Count {"n":"2026-11-25T10:00:05Z"}"#), "\(result.output)")
        #expect(lines.contains { $0.hasPrefix("  PASS the refusal expected") }, "\(result.output)")
        #expect(lines.last == "1 passed, 2 failed (1 file)")
    }

    @Test func mistakesInATestFileNameTheirLine() throws {
        let sandbox = try Self.sandbox(
            tests: """
                tests:
                  - name: typo
                    inputs: []
                    expect:
                      out.print: [ { bdy: x } ]
                    sinks: { log.write: explode }
                """)
        let result = try Self.test(sandbox)
        #expect(result.status == 1)
        let errors = result.errors.split(separator: "\n").map(String.init)
        let file = "routes/tests/graph.yaml"
        #expect(errors.contains { $0.hasPrefix("\(file):3:5: error: unknown key 'inputs' in a test case") }, "\(result.errors)")
        #expect(errors.contains { $0.hasPrefix("\(file):5:22: error: unknown key 'bdy' in an expected envelope") }, "\(result.errors)")
        #expect(
            errors.contains("\(file):6:25: error: sinks.log.write must be one of accept, reject, retry, refuse, fail"), "\(result.errors)")
        #expect(result.output.contains("0 passed, 0 failed, 1 file not run"), "\(result.output)")
        // Names the graph lacks: each named where it is written.
        try """
        tests:
          - name: typos
            services: { nobody: 1 }
            input: [ { port: clock.tick, body: { count: 1, time: a } } ]
            expect:
              out.prnt: []
            dead_letters: { durabel: 0 }
        """.write(to: sandbox.routes.appendingPathComponent("tests/graph.yaml"), atomically: true, encoding: .utf8)
        let typos = try Self.test(sandbox)
        #expect(typos.status == 1)
        let lines = typos.output.split(separator: "\n").map(String.init)
        #expect(lines.contains("    expect (\(file):6:7): out.prnt is not a sink port of this graph"), "\(typos.output)")
        #expect(
            lines.contains("    services (\(file):3:17): nobody is neither a service port nor an iiidea of this graph"), "\(typos.output)")
        #expect(lines.contains("    dead_letters (\(file):7:21): no route is named 'durabel'"), "\(typos.output)")
    }

    @Test func httpPiecesNeverCallOutAndSinksCanRetryFailOrRefuse() throws {
        let sandbox = try Sandbox(plugins: ["core"])
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1h } }
              out:   { plugin: core, console: { format: body } }
              log:   { plugin: core, file: { path: "never-written.jsonl" } }
            routes:
              - { name: durable, from: clock.tick, delivery: at-least-once, retry: { attempts: 3, backoff: 10ms }, to: log.write }
              - { name: plain, from: clock.tick, to: out.print }
            iiideas:
              - id: weather
                trigger: { port: clock.tick }
                service: { piece: http, preferences: { url: "https://weather.invalid/now?c={{body.count}}" } }
                action: { port: out.print }
            """)
        try """
        tests:
          - name: the http piece answers as the test says, retries end in a dead letter
            sinks: { log.write: retry }
            services: { weather: { sunny: true } }
            input:
              - { port: clock.tick, body: { count: 1, time: a } }
            order: any
            expect:
              out.print:
                - { type: core.Tick }
                - { body: { sunny: true }, headers: { iiidea.id: weather } }
              log.write: [ {}, {}, {} ]
            dead_letters: { durable: 1 }
          - name: failing and refusing sinks
            sinks: { log.write: fail, out.print: refuse }
            input:
              - { port: clock.tick, body: { count: 1, time: a } }
            expect:
              log.write: [ {}, {}, {} ]
              out.print: [ {}, {} ]
            dead_letters: { durable: 1 }
        """.write(to: sandbox.root.appendingPathComponent("graph.yaml"), atomically: true, encoding: .utf8)
        let result = try RouterProcess.runToExit(["test", "graph.yaml", "routes", "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 0, "\(result.output)\n\(result.errors)")
        #expect(result.output.contains("2 passed, 0 failed (1 file)"), "\(result.output)")
    }
}
