import Foundation
import Testing

/// The core plugin's `subprocess:` source: a program's output lines as envelopes, restarts,
/// bad lines named and counted, the program's process group ended with the router.
@Suite(.timeLimit(.minutes(1)))
struct SubprocessTests {
    /// Whether `pid` is gone (or a zombie waiting for its parent).
    static func isGone(_ pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return true }
        return status.contains("State:\tZ")
    }

    @Test func jsonLinesBecomeEnvelopesAndTheProgramIsRestarted() async throws {
        let sandbox = try Sandbox(plugins: ["core"])
        try #"""
        echo '{"n": 1}'
        echo 'not json'
        echo '{"n": 2}'
        printf '{"n": 3}'
        exit 3
        """#.write(toFile: sandbox.path("emit.sh"), atomically: true, encoding: .utf8)
        try sandbox.writeRoutes(
            """
            instances:
              program: { plugin: core, subprocess: { command: [sh, "\(sandbox.path("emit.sh"))"], codec: json, restart: 100ms } }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { from: program.stdout, to: out.write }
            """)
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox)
        await router.waitUntil("the second run's lines") { ((try? sandbox.jsonLines(of: "out.jsonl")) ?? []).count >= 6 }
        let envelopes = try sandbox.jsonLines(of: "out.jsonl")
        // The last line has no newline: it is taken at the end of the output.
        #expect(envelopes.prefix(6).compactMap { ($0["body"] as? [String: Int])?["n"] } == [1, 2, 3, 1, 2, 3])
        #expect(envelopes.first?["type"] as? String == "json")
        #expect(router.standardError.contains("output line 2 is not JSON"))
        #expect(router.standardError.contains("exited (status 3); restarting in 0.1 s"))
        #expect(router.stop() == 0)
    }

    @Test func linesAreTextAndStoppingEndsTheProgramAndWhatItStarted() async throws {
        let sandbox = try Sandbox(plugins: ["core"])
        try """
        sleep 60 &
        echo "$! $$" > "\(sandbox.path("pids"))"
        echo "hello from the program"
        wait
        """.write(toFile: sandbox.path("forever.sh"), atomically: true, encoding: .utf8)
        try sandbox.writeRoutes(
            """
            instances:
              program: { plugin: core, subprocess: { command: [sh, "\(sandbox.path("forever.sh"))"] } }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { from: program.stdout, to: out.write }
            """)
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox)
        await router.waitUntil("the line") { !((try? sandbox.jsonLines(of: "out.jsonl")) ?? []).isEmpty }
        let line = try #require(try sandbox.jsonLines(of: "out.jsonl").first)
        #expect(line["type"] as? String == "core.Line")
        #expect(line["body"] as? String == "hello from the program")
        let pids = try String(contentsOfFile: sandbox.path("pids"), encoding: .utf8)
            .split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        #expect(pids.count == 2)
        #expect(pids.allSatisfy { !Self.isGone($0) })
        #expect(router.stop() == 0)
        let deadline = ContinuousClock.now + .seconds(5)
        while !pids.allSatisfy(Self.isGone), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        #expect(pids.allSatisfy(Self.isGone), "still running: \(pids.filter { !Self.isGone($0) })")
    }

    @Test func aProgramThatCannotStartIsNamed() async throws {
        let sandbox = try Sandbox(plugins: ["core"])
        try sandbox.writeRoutes(
            """
            instances:
              program: { plugin: core, subprocess: { command: [/nonexistent/program], restart: 10s } }
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { from: program.stdout, to: out.write }
            """)
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox)
        await router.waitUntil("the failure") {
            router.standardError.contains("cannot start /nonexistent/program: No such file or directory")
        }
        #expect(router.stop() == 0)
    }
}
