import Foundation
import Testing

@testable import IntegrationSupport

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
        #expect(router.logged("output line 2 is not JSON"))
        #expect(router.logged("exited (status 3); restarting in 0.1 s"))
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
            router.standardError.contains("cannot start /nonexistent/program in \(sandbox.routes.path)/.: No such file or directory")
        }
        #expect(router.stop() == 0)
    }

    /// Relative paths in a route file are taken from its folder, whatever the router's working
    /// directory: the program runs there (`command: [sh, emit.sh]`), the file sink writes there.
    @Test func relativePathsAreTakenFromTheRouteFilesFolder() async throws {
        let sandbox = try Sandbox(plugins: ["core"])
        let folder = sandbox.routes.appendingPathComponent("nested")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try "echo from-$(basename \"$PWD\")\n".write(to: folder.appendingPathComponent("emit.sh"), atomically: true, encoding: .utf8)
        try """
        instances:
          program: { plugin: core, subprocess: { command: [sh, emit.sh], restart: 10s } }
          out: { plugin: core, file: { path: out/lines.jsonl } }
        routes:
          - { from: program.stdout, to: out.write }
        """.write(to: folder.appendingPathComponent("main.yaml"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("out"), withIntermediateDirectories: true)
        let router = try RouterProcess(
            ["run", "nested/main.yaml", "--plugins", sandbox.plugins.path], in: sandbox.routes)
        let written = folder.appendingPathComponent("out/lines.jsonl").path
        await router.waitUntil("the line beside the route file") {
            ((try? String(contentsOfFile: written, encoding: .utf8)) ?? "").contains("\n")
        }
        let line = try String(contentsOfFile: written, encoding: .utf8)
        #expect(line.contains(#""body":"from-nested""#), "\(line)\n\(router.standardError)")
        #expect(router.stop() == 0)
    }
}
