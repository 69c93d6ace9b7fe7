import Foundation
import Testing

@testable import IntegrationSupport

/// `switchyard tap` against a running router: it sees what the sink receives.
@Suite(.timeLimit(.minutes(2)))
struct TapTests {
    static func routes(_ sandbox: Sandbox) -> String {
        """
        instances:
          clock: { plugin: core, timer: { interval: 20ms } }
          out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
        routes:
          - name: shaped
            from: clock.tick
            when: "body.count > 0"
            map: { n: "{{body.count}}", secret: "${TAP_SECRET}" }
            to: out.write
        """
    }

    @Test func aRouteTapSeesWhatTheSinkReceivesWithSecretsMasked() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(Self.routes(sandbox))
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["TAP_SECRET": "tap-secret-4411"])
        let result = try RouterProcess.runToExit(
            ["tap", "shaped", "--limit", "3", "--format", "json", "--admin", admin], in: sandbox.root, timeout: .seconds(30))
        #expect(result.status == 0, "\(result.errors)")
        let tapped = result.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(tapped.count == 3, "\(result.output)")
        #expect(!result.output.contains("tap-secret-4411"), "secrets are masked")
        #expect(tapped.allSatisfy { (($0["body"] as? [String: Any])?["secret"] as? String) == "***" })
        let ids = tapped.compactMap { $0["id"] as? String }
        await router.waitUntil("the tapped envelopes written") {
            let written = Set(((try? sandbox.jsonLines(of: "out.jsonl")) ?? []).compactMap { $0["id"] as? String })
            return ids.allSatisfy(written.contains)
        }
        let written = try sandbox.jsonLines(of: "out.jsonl").filter { ids.contains($0["id"] as? String ?? "") }
        #expect(
            written.compactMap { ($0["body"] as? [String: Any])?["n"] as? Int }
                == tapped.compactMap { ($0["body"] as? [String: Any])?["n"] as? Int })
        #expect(router.stop() == 0)
    }

    @Test func aPortTapFiltersByItsConditionAndUnknownTargetsAreErrors() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(Self.routes(sandbox))
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["TAP_SECRET": "x"])
        let later = try RouterProcess.runToExit(
            ["tap", "clock.tick", "--when", "body.count > 5", "--limit", "2", "--format", "json", "--admin", admin], in: sandbox.root,
            timeout: .seconds(30))
        #expect(later.status == 0, "\(later.errors)")
        let counts = later.output.split(separator: "\n").compactMap {
            ((try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["body"] as? [String: Any])?["count"] as? Int
        }
        #expect(counts.count == 2 && counts.allSatisfy { $0 > 5 }, "\(later.output)")
        #expect(later.output.contains(#""source":"clock.tick""#), "a port tap sees the envelope as the port emitted it")
        let broken = try RouterProcess.runToExit(["tap", "clock.tick", "--when", "((", "--admin", admin], in: sandbox.root)
        #expect(broken.status == 1)
        #expect(broken.errors.contains("the condition does not parse"), "\(broken.errors)")
        let unknown = try RouterProcess.runToExit(["tap", "nothing", "--limit", "1", "--admin", admin], in: sandbox.root)
        #expect(unknown.status == 1)
        #expect(unknown.errors.contains("route nothing: no such route"), "\(unknown.errors)")
        // A field the tapped type lacks would never match: refused at once, as validate would.
        let absent = try RouterProcess.runToExit(["tap", "clock.tick", "--when", "body.nope > 1", "--admin", admin], in: sandbox.root)
        #expect(absent.status == 1)
        #expect(absent.errors.contains("the condition reads body.nope, but type core.Tick has no field 'nope'"), "\(absent.errors)")
        #expect(router.stop() == 0)
    }

    /// A tap whose router stops says so and fails, rather than ending as if it had finished.
    @Test func aTapSaysWhyItEndsWhenTheRouterStops() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(Self.routes(sandbox))
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["TAP_SECRET": "x"])
        let tap = try RouterProcess(["tap", "shaped", "--format", "json", "--admin", admin], in: sandbox.root)
        await tap.waitUntil("the first envelope tapped") { tap.standardOutput.contains(#""type""#) }
        #expect(router.stop() == 0)
        #expect(tap.waitForExit(timeout: .seconds(30)) == 1)
        #expect(tap.standardError.contains("tap ended after"), "\(tap.standardError)")
        #expect(tap.standardError.contains("the router is stopping") || tap.standardError.contains("the router closed the connection"))
    }
}
