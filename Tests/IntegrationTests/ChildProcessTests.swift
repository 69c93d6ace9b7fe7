import Foundation
import Testing

@testable import IntegrationSupport

/// Every peer a test starts dies with the test run, even when the runner is killed with
/// SIGKILL: a stand-in runner starts peers with `ChildProcess.command` (what every harness
/// uses), is killed, and the peers — a single process, and a process that forked workers —
/// are gone. And since the parent-death signal follows the spawning *thread*, the launcher
/// thread is what keeps a peer alive while the test that started it moves between threads.
@Suite(.timeLimit(.minutes(1)))
struct ChildProcessTests {
    /// Whether `pid` is gone: no such process, or a zombie nobody has reaped yet.
    static func isGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        // "pid (comm) S …": the state follows the last ')'.
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    /// The live processes in process group `group`.
    static func members(of group: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 2
            else { return false }
            return fields[0] != "Z" && Int32(fields[2]) == group
        }
    }

    /// Waits (bounded) until `condition` holds.
    static func waitUntil(_ what: String, timeout: Duration = .seconds(10), _ condition: () -> Bool) async {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for: \(what)")
                return
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func peersDieWhenTheRunnerIsKilled() async throws {
        let sandbox = try Sandbox()
        let pids = sandbox.path("pids")
        // The peers as a harness starts them: one process, and one that forks two workers.
        let single = ChildProcess.command("/bin/sleep", ["600"])
        let forking = ChildProcess.command("/bin/sh", ["-c", "sleep 600 & sleep 600 & wait"], tie: .processGroup)
        // The stand-in runner starts both, writes their pids, and waits. Like Foundation's
        // Process, it makes each child the leader of a process group of its own (`set -m`).
        let runner = Process()
        runner.executableURL = URL(fileURLWithPath: "/bin/bash")
        runner.arguments =
            [
                "-c", #"set -m; "${@:2:$1}" & a=$!; "${@:$(($1 + 2))}" & b=$!; echo "$a $b" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; wait"#,
                "runner",
            ]
            + [String(single.arguments.count + 1), single.executable] + single.arguments + [forking.executable] + forking.arguments
        runner.environment = ["PIDS": pids, "PATH": "/usr/bin:/bin"]
        try ChildProcess.start(runner)
        var started: [Int32] = []
        await Self.waitUntil("the peers started") {
            started = sandbox.lines(of: "pids").first?.split(separator: " ").compactMap { Int32($0) } ?? []
            return started.count == 2
        }
        try #require(started.count == 2)
        let (peer, group) = (started[0], started[1])
        await Self.waitUntil("the workers forked") { Self.members(of: group).count == 4 }  // the supervisor, sh, two sleeps
        #expect(!Self.isGone(peer))

        kill(runner.processIdentifier, SIGKILL)
        runner.waitUntilExit()
        await Self.waitUntil("the single peer gone") { Self.isGone(peer) }
        await Self.waitUntil("the peer's whole group gone") { Self.members(of: group).isEmpty }
        #expect(Self.isGone(peer))
        #expect(Self.members(of: group).isEmpty)
    }

    @Test func aPeerOutlivesTheThreadThatAskedForItButNotARawSpawnFromIt() async throws {
        func spawnFromShortLivedThread(_ spawn: @escaping @Sendable () throws -> Process) throws -> Process {
            let box = ProcessBox()
            let thread = Thread { box.set(Result { try spawn() }) }
            thread.start()
            return try box.get()
        }
        // Control: `setpriv` spawned straight from a thread that then ends dies with the thread.
        let raw = try spawnFromShortLivedThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ChildProcess.setpriv)
            process.arguments = ["--pdeathsig", "KILL", "--", "/bin/sleep", "600"]
            try process.run()
            // The thread ends only once setpriv has set the signal and become sleep: ended
            // earlier, it would leave nobody for the signal to follow. (This thread is the
            // test's own, not a cooperative one: it may block.)
            let deadline = ContinuousClock.now + .seconds(10)
            while (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/comm", encoding: .utf8)) != "sleep\n",
                ContinuousClock.now < deadline
            {
                usleep(10_000)
            }
            return process
        }
        await Self.waitUntil("the raw spawn killed with its thread") { !raw.isRunning }
        #expect(raw.terminationReason == .uncaughtSignal && raw.terminationStatus == SIGKILL)

        // Through the launcher it lives on: given the time the control took to die, and more.
        let tied = try spawnFromShortLivedThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sleep")
            process.arguments = ["600"]
            // Its own folder (the handler below replaces the one that would remove a fresh one).
            process.currentDirectoryURL = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            try ChildProcess.start(process)
            return process
        }
        let ended = DispatchSemaphore(value: 0)
        tied.terminationHandler = { _ in ended.signal() }
        #expect(ended.wait(timeout: .now() + .milliseconds(500)) == .timedOut, "the peer lives on")
        #expect(tied.isRunning)
        // What the process-group tie relies on: Foundation makes each child a group leader.
        #expect(getpgid(tied.processIdentifier) == tied.processIdentifier)
        kill(tied.processIdentifier, SIGKILL)
        tied.waitUntilExit()
    }

    /// A child a test starts without a folder never runs in the runner's (the package root),
    /// where what it writes would land among the sources: it runs in a fresh empty folder of
    /// its own, which is gone once the child has ended.
    @Test func aChildStartedWithoutAFolderRunsInAFreshOneRemovedWhenItEnds() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "pwd; ls -A | wc -l"]
        let output = Pipe()
        process.standardOutput = output
        try ChildProcess.start(process)
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        try #require(printed.count == 2)
        let folder = String(printed[0])
        #expect(folder.hasPrefix(NSTemporaryDirectory()) || folder.hasPrefix("/tmp/"))
        #expect(folder != FileManager.default.currentDirectoryPath)
        #expect(printed[1] == "0", "the folder was empty")
        await Self.waitUntil("the child's folder removed") { !FileManager.default.fileExists(atPath: folder) }
    }
}

/// A result handed from a short-lived thread to the test.
private final class ProcessBox: @unchecked Sendable {
    // `result` is written before `ready` is signalled and read after.
    private var result: Result<Process, any Error>?
    private let ready = DispatchSemaphore(value: 0)

    func set(_ result: Result<Process, any Error>) {
        self.result = result
        ready.signal()
    }

    func get() throws -> Process {
        guard ready.wait(timeout: .now() + 10) == .success, let result else { throw SandboxError("the thread did not answer") }
        return try result.get()
    }
}
