import Foundation
import Testing

@testable import IntegrationSupport

/// ABI version 1 plugins keep loading beside version 2 ones: `Support/ABIv1/upper_v1.c` is the C
/// example as it was written against the version 1 header (a copy of that header beside it),
/// compiled with `cc` here; `examples/c-plugin/upper.c` is the same plugin on version 2. One
/// router loads both and routes envelopes through one and then the other.
@Suite(.timeLimit(.minutes(2)))
struct ABICompatibilityTests {
    static var versionOneSource: URL {
        BuildProducts.packageRoot.appendingPathComponent("Tests/IntegrationTests/Support/ABIv1/upper_v1.c")
    }

    @Test func versionOneAndVersionTwoPluginsRouteSideBySide() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try CCompiler.compilePlugin(Self.versionOneSource, to: sandbox.plugins.appendingPathComponent("libupper1.so"))
        try CCompiler.compilePlugin(Sandbox.upperSource, to: sandbox.plugins.appendingPathComponent("libupper.so"))
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 20ms, count: 4 } }
              old:   { plugin: upper1, prefix: "v1 " }
              new:   { plugin: upper, prefix: "v2 " }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: ticks, from: clock.tick, template: "tick {{body.count}}", to: old.in }
              - { name: across, from: old.out, to: new.in }
              - { name: done, from: new.out, to: out.write }
            """
        )
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("four envelopes in out.jsonl") { sandbox.lines(of: "out.jsonl").count >= 4 }
        #expect(router.stop() == 0)
        let lines = try sandbox.jsonLines(of: "out.jsonl")
        // The version 2 plugin read what the version 1 plugin emitted, field for field.
        #expect(lines.compactMap { $0["body"] as? String } == (1...4).map { "v2 V1 TICK \($0)" })
        #expect(lines.allSatisfy { ($0["trace"] as? [String]) == ["clock", "old", "new"] })
        #expect(lines.allSatisfy { $0["type"] as? String == "text" && $0["contentType"] as? String == "text/plain" })

        let listing = try RouterProcess.runToExit(
            ["plugins", "inspect", sandbox.plugins.appendingPathComponent("libupper1.so").path], in: sandbox.root)
        #expect(listing.status == 0, "\(listing.errors)")
        let manifest = try JSONSerialization.jsonObject(with: Data(listing.output.utf8)) as? [String: Any]
        #expect(manifest?["abi"] as? Int == 1)
        #expect(manifest?["name"] as? String == "upper1")
    }
}
