import Foundation
import Testing

@testable import IntegrationSupport

/// The plugin ABI is language-neutral: `examples/c-plugin/upper.c`, plain C compiled with `cc`
/// against the header alone, loads and routes like the Swift `core` plugin.
@Suite(.timeLimit(.minutes(2)))
struct CPluginTests {
    @Test func upperUppercasesPrefixesAndKeepsTheTrace() async throws {
        let sandbox = try Sandbox.withUpperPlugin()
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 20ms, count: 5 } }
              up:    { plugin: upper, prefix: ">> " }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: ticks
                from: clock.tick
                template: "tick {{body.count}} of {{source}}"
                to: up.in
              - name: shouted
                from: up.out
                to: out.write
            """
        )
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("five envelopes in out.jsonl") { sandbox.lines(of: "out.jsonl").count >= 5 }
        #expect(router.stop() == 0)
        let lines = try sandbox.jsonLines(of: "out.jsonl")
        #expect(lines.count == 5)
        #expect(lines.compactMap { $0["body"] as? String } == (1...5).map { ">> TICK \($0) OF CLOCK.TICK" })
        #expect(lines.allSatisfy { ($0["trace"] as? [String]) == ["clock", "up"] })
        #expect(lines.allSatisfy { $0["source"] as? String == "up.out" })
        // Type and content type pass through the C plugin unchanged (a template makes text).
        #expect(lines.allSatisfy { $0["type"] as? String == "text" && $0["contentType"] as? String == "text/plain" })
        // The host gave each new envelope its own id.
        #expect(Set(lines.compactMap { $0["id"] as? String }).count == 5)
        #expect(router.logged(sandbox.plugins.appendingPathComponent("libupper.so").path))
        #expect(RouteTotals.parse(route: "shouted", in: router.standardError)?.delivered == 5)
    }

    @Test func inspectPrintsTheManifestOfTheCPlugin() throws {
        let sandbox = try Sandbox.withUpperPlugin()
        let library = sandbox.plugins.appendingPathComponent("libupper.so").path
        let result = try RouterProcess.runToExit(["plugins", "inspect", library], in: sandbox.root)
        #expect(result.status == 0, "\(result.errors)")
        let json = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        #expect(json?["name"] as? String == "upper")
        #expect(json?["version"] as? String == "1.0.0")
        #expect(json?["abi"] as? Int == 2)
        #expect(json?["path"] as? String == library)
        let ports = (json?["ports"] as? [[String: Any]]) ?? []
        #expect(ports.compactMap { $0["name"] as? String } == ["in", "out"])
        #expect(ports.compactMap { $0["direction"] as? String } == ["sink", "source"])
        #expect(ports.first?["feeds"] as? [String] == ["out"])
        let config = json?["config"] as? [String: Any]
        #expect(config?["additionalProperties"] as? Bool == false)
        #expect((config?["properties"] as? [String: Any])?["prefix"] != nil)
    }

    @Test func configOfTheCPluginIsCheckedAgainstItsSchema() throws {
        let sandbox = try Sandbox.withUpperPlugin()
        let yaml = """
            instances:
              clock: { plugin: core, timer: { interval: 1s } }
              up:    { plugin: upper, prefix: 3, shout: true }
            routes:
              - { name: ticks, from: clock.tick, to: up.in }
            """
        try sandbox.writeRoutes(yaml)
        let file = sandbox.routes.appendingPathComponent("main.yaml").path
        let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        let errors = result.errors.split(separator: "\n").map(String.init)
        let prefixAt = try #require(position(of: "prefix: 3", in: yaml))
        let shoutAt = try #require(position(of: "shout", in: yaml))
        #expect(errors.contains { $0.hasPrefix("\(file):\(prefixAt.line):\(prefixAt.column): error: ") && $0.contains("prefix") })
        #expect(errors.contains { $0.hasPrefix("\(file):\(shoutAt.line):\(shoutAt.column): error: ") && $0.contains("shout") })
    }

    /// `type: upper.Shout` makes `out` emit a type the instance declares through describe():
    /// `validate` knows it before anything runs, accepts a route that builds it, refuses one that
    /// names a type nobody declares, and points a refused `type` at its line and column.
    @Test func aTypeFromTheConfigurationIsDeclaredThroughDescribe() throws {
        let sandbox = try Sandbox.withUpperPlugin()
        let file = sandbox.routes.appendingPathComponent("main.yaml").path
        func validate(_ yaml: String) throws -> (status: Int32, errors: [String]) {
            try sandbox.writeRoutes(yaml)
            let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
            return (result.status, result.errors.split(separator: "\n").map(String.init))
        }
        func routes(upper: String, type: String) -> String {
            """
            instances:
              clock: { plugin: core, timer: { interval: 1s } }
              up:    { plugin: upper, type: \(upper) }
              again: { plugin: upper }
            routes:
              - { name: shouted, from: up.out, type: \(type), template: "{{body}}!", to: again.in }
              - { name: ticks, from: clock.tick, template: "tick", to: up.in }
            """
        }
        let accepted = try validate(routes(upper: "upper.Shout", type: "upper.Shout"))
        #expect(accepted.status == 0, "\(accepted.errors)")

        let wrongYAML = routes(upper: "upper.Shout", type: "upper.Whisper")
        let wrong = try validate(wrongYAML)
        #expect(wrong.status == 1)
        let whisperAt = try #require(position(of: "upper.Whisper", in: wrongYAML))
        #expect(
            wrong.errors.contains { $0 == "\(file):\(whisperAt.line):\(whisperAt.column): error: unknown type 'upper.Whisper'" },
            "\(wrong.errors)")

        // The plugin's own refusal starts with the JSON Pointer /type: the host reports it at
        // that setting in the route file.
        let foreignYAML = routes(upper: "Shout", type: "text")
        let foreign = try validate(foreignYAML)
        #expect(foreign.status == 1)
        let shoutAt = try #require(position(of: "type: Shout", in: foreignYAML))
        #expect(
            foreign.errors.contains {
                $0.hasPrefix("\(file):\(shoutAt.line):\(shoutAt.column): error: instance 'up' (plugin upper): /type: ")
                    && $0.contains("write upper.NAME")
            }, "\(foreign.errors)")
    }

    /// What `out` emits at run time carries the configured type.
    @Test func theConfiguredTypeIsWhatOutEmits() async throws {
        let sandbox = try Sandbox.withUpperPlugin()
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 20ms, count: 2 } }
              up:    { plugin: upper, type: upper.Shout }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: ticks, from: clock.tick, template: "tick", to: up.in }
              - { name: shouted, from: up.out, when: 'type == "upper.Shout"', to: out.write }
            """
        )
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("two envelopes in out.jsonl") { sandbox.lines(of: "out.jsonl").count >= 2 }
        #expect(router.stop() == 0)
        let lines = try sandbox.jsonLines(of: "out.jsonl")
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0["type"] as? String == "upper.Shout" && $0["body"] as? String == "TICK" })
    }
}
