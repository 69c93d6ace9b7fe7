import Foundation
import Testing

/// The `switchyard` binary run as a child process, with its output captured. Every test
/// bounds how long it waits and the process is killed on deinit, so nothing outlives a test.
final class RouterProcess {
    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    /// The router's standard input: a socket, not a pipe, so a write to a router that has
    /// died fails with EPIPE (`MSG_NOSIGNAL`) instead of killing the whole test process with
    /// SIGPIPE.
    private let input = StandardInputSocket()
    private let stdoutBuffer = OutputBuffer()
    private let stderrBuffer = OutputBuffer()
    private var readers: [PipeReader] = []

    /// Starts `switchyard` (the built one unless `executable` names another) with `arguments`
    /// in `directory`; inside `namespace` when given.
    init(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:], namespace: NetworkNamespace? = nil,
        executable: URL = BuildProducts.switchyard, fileLimit: (soft: Int, hard: Int?)? = nil
    ) throws {
        if let fileLimit {
            // prlimit sets the soft limit alone ("N:") or both ("N:M") and runs the router in its place.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            process.arguments = ["--nofile=\(fileLimit.soft):\(fileLimit.hard.map(String.init) ?? "")", "--", executable.path] + arguments
        } else if let namespace {
            // `ip netns exec` runs the command in place of itself: the pid is the router's.
            (process.executableURL, process.arguments) = namespace.wrap([executable.path] + arguments)
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        process.currentDirectoryURL = directory
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input.childEnd
        readers = [PipeReader(output, into: stdoutBuffer), PipeReader(errors, into: stderrBuffer)]
        try ChildProcess.start(process)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for reader in readers { reader.stop() }
    }

    /// Standard output so far.
    var standardOutput: String { stdoutBuffer.text }
    /// Standard error so far (the log).
    var standardError: String { stderrBuffer.text }

    /// Whether the log holds `needle`, waiting (at most `timeout`, woken by each read of the
    /// pipe) for it to arrive: a line the router wrote before an event the test saw may still
    /// be in the pipe when the test looks.
    func logged(_ needle: String, within timeout: Duration = .seconds(10)) -> Bool {
        stderrBuffer.waitFor(needle, timeout: timeout)
    }

    /// Writes to the router's standard input.
    func send(_ text: String) { input.write(text) }

    /// Sends `signal` (SIGHUP to reload, say) without waiting for anything.
    func send(signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// The `host:port` the admin port logged once listening (`run --admin 127.0.0.1:0`).
    var adminAddress: String? {
        for line in standardError.split(separator: "\n") where line.contains("admin listening") {
            if let field = line.split(separator: " ").first(where: { $0.hasPrefix("address=") }) { return String(field.dropFirst(8)) }
        }
        return nil
    }

    /// Starts `switchyard run` on the sandbox with the admin port on a free port and waits until
    /// it listens; returns the router and the admin `host:port`.
    static func startWithAdmin(
        _ sandbox: Sandbox, extra: [String] = [], environment: [String: String] = [:], fileLimit: (soft: Int, hard: Int?)? = nil
    ) async throws -> (RouterProcess, String) {
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--admin", "127.0.0.1:0"] + extra, in: sandbox.root,
            environment: environment, fileLimit: fileLimit)
        await router.waitUntil("the admin port to listen") { router.adminAddress != nil }
        return (router, router.adminAddress ?? "")
    }

    /// How often `needle` appears in the router's log so far.
    func occurrences(of needle: String) -> Int { standardError.components(separatedBy: needle).count - 1 }

    /// Closes the router's standard input.
    func closeInput() { input.close() }

    /// Waits until `condition` holds, checking every 20 ms, for at most `timeout`. Fails the
    /// test (with the router's log) when time runs out or the router exits first. It suspends
    /// between checks, leaving the cooperative threads to the tests running beside it.
    func waitUntil(
        _ what: String,
        timeout: Duration = .seconds(20),
        sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: () throws -> Bool
    ) async rethrows {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try condition() { return }
            if !process.isRunning {
                if try condition() { return }
                Issue.record(
                    "router exited (status \(process.terminationStatus)) before: \(what)\n\(standardError)", sourceLocation: sourceLocation)
                return
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        // The deadline may have passed while this task waited for a thread: look once more.
        if try condition() { return }
        Issue.record("timed out after \(timeout) waiting for: \(what)\n\(standardError)", sourceLocation: sourceLocation)
    }

    /// Sends `signal` and waits (bounded) for the process to exit; returns its status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(20)) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, signal) }
        return waitForExit(timeout: timeout)
    }

    /// Waits (bounded) for the process to exit by itself; kills it after `timeout`.
    @discardableResult
    func waitForExit(timeout: Duration = .seconds(20)) -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            Issue.record("router did not exit within \(timeout); killed\n\(standardError)")
        }
        process.waitUntilExit()
        // The readers read up to the end of the pipes (the last lines, the route totals, are
        // written just before exit). A grandchild holding a pipe open keeps its end away: then
        // what is there is taken.
        _ = stdoutBuffer.waitForEnd(timeout: .seconds(5)) && stderrBuffer.waitForEnd(timeout: .seconds(5))
        for reader in readers { reader.stop() }
        return process.terminationStatus
    }

    /// Runs `switchyard` to completion and returns (status, stdout, stderr).
    static func runToExit(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:], timeout: Duration = .seconds(60),
        executable: URL = BuildProducts.switchyard
    ) throws -> (status: Int32, output: String, errors: String) {
        let router = try RouterProcess(arguments, in: directory, environment: environment, executable: executable)
        router.closeInput()
        let status = router.waitForExit(timeout: timeout)
        return (status, router.standardOutput, router.standardError)
    }
}

/// Output collected from a pipe by a ``PipeReader``.
final class OutputBuffer: @unchecked Sendable {
    // `data` and `ended` are only touched under `condition`'s lock.
    private let condition = NSCondition()
    private var data = Data()
    private var ended = false

    /// Waits, at most `timeout`, until the output holds `needle` `count` times or the pipe
    /// ended; returns whether it holds it that often. Woken by each read of the pipe.
    func waitFor(_ needle: String, count: Int = 1, timeout: Duration) -> Bool {
        let holds = { (data: Data) in String(decoding: data, as: UTF8.self).components(separatedBy: needle).count - 1 >= count }
        return wait(timeout: timeout) { data, ended in holds(data) || ended } && condition.withLock { holds(data) }
    }

    /// What one read of the pipe gave: an empty read is its end.
    func take(_ chunk: Data) {
        condition.withLock {
            if chunk.isEmpty { ended = true } else { data.append(chunk) }
            condition.broadcast()
        }
    }

    /// Waits, at most `timeout`, until the pipe's end was read; returns whether it was.
    func waitForEnd(timeout: Duration) -> Bool { wait(timeout: timeout) { _, ended in ended } }

    /// Waits, at most `timeout`, until `ready` holds for what was read so far and whether the
    /// pipe ended (each check under the lock); returns whether it held.
    private func wait(timeout: Duration, until ready: (Data, Bool) -> Bool) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let deadline = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) * 1e-18)
        return condition.withLock {
            while !ready(data, ended) { if !condition.wait(until: deadline) { return ready(data, ended) } }
            return true
        }
    }

    var text: String { condition.withLock { String(decoding: data, as: UTF8.self) } }
}

/// A connected pair of Unix stream sockets standing in for a pipe to a child's standard input.
final class StandardInputSocket: Sendable {
    /// The end the child reads as its standard input.
    let childEnd: FileHandle
    private let writerEnd: FileHandle

    init() {
        var ends: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let made = ends.withUnsafeMutableBufferPointer { socketpair(AF_UNIX, type, 0, $0.baseAddress) }
        precondition(made == 0, "socketpair: errno \(errno)")
        childEnd = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        writerEnd = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
    }

    /// Writes all of `text`; gives up quietly once the child has gone.
    func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(writerEnd.fileDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Ends the child's input (its reads see end of file).
    func close() { shutdown(writerEnd.fileDescriptor, Int32(SHUT_WR)) }
}
