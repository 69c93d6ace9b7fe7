import Foundation
import Testing

@testable import IntegrationSupport

/// `switchyard top` against a running router: the tables it prints when not on a terminal.
@Suite(.timeLimit(.minutes(2)))
struct TopTests {
    @Test func topPrintsRatesPerRouteAndInstanceAndWhyAnInstanceIsNotReady() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - name: ticks
                from: clock.tick
                to: out.write
              - name: few
                from: clock.tick
                when: "body.count < 0"
                to: out.write
            """
        )
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox)
        await router.waitUntil("ticks written") { sandbox.lines(of: "out.jsonl").count >= 3 }
        let result = try RouterProcess.runToExit(["top", "--admin", admin, "--interval", "300ms", "--iterations", "2"], in: sandbox.root)
        #expect(result.status == 0, "\(result.errors)")
        let blocks = result.output.components(separatedBy: "switchyard top — ").dropFirst()
        #expect(blocks.count == 2, "\(result.output)")
        // The first refresh has no rates yet; the second has the clock's (100 a second).
        let first = try #require(blocks.first).split(separator: "\n")
        let second = try #require(blocks.last).split(separator: "\n")
        #expect(first.contains { $0.hasPrefix("ticks ") && $0.split(separator: " ", omittingEmptySubsequences: true)[1] == "-" })
        let ticks = try #require(second.first { $0.hasPrefix("ticks ") }).split(separator: " ", omittingEmptySubsequences: true)
        let received = try #require(Double(ticks[1]))
        #expect(received > 20 && received < 500, "\(ticks)")
        let few = try #require(second.first { $0.hasPrefix("few ") }).split(separator: " ", omittingEmptySubsequences: true)
        #expect(Double(few[3]) ?? 0 > 20, "everything that reaches 'few' is filtered: \(few)")
        let clock = try #require(second.first { $0.hasPrefix("clock ") }).split(separator: " ", omittingEmptySubsequences: true)
        #expect(clock[1] == "yes")
        #expect(Double(clock[2]) ?? 0 > 20, "\(clock)")
        #expect(!result.output.contains("\u{1B}["), "no terminal control codes when not on a terminal")
        #expect(router.stop() == 0)

        let gone = try RouterProcess.runToExit(["top", "--admin", admin, "--iterations", "1"], in: sandbox.root)
        #expect(gone.status == 1)
        #expect(gone.errors.contains("is the router running with --admin?"), "\(gone.errors)")
    }
}
