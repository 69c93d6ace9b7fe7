import Foundation

/// A test peer written in Python's standard library, run as a child process: it listens on a
/// free loopback port and writes "port pid" to a file once it does. `stop()` kills it.
final class PythonServer {
    let port: Int
    private let process: Process
    private let serverProcessID: Int32

    /// Runs `python3 ARGUMENTS… PORT_FILE`-style: `arguments` must make the script write the
    /// port file at `portFile`.
    init(arguments: [String], portFile: String, what: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        process.standardOutput = FileHandle.nullDevice
        // It runs in the test's folder, the one its port file is in.
        process.currentDirectoryURL = URL(fileURLWithPath: portFile).deletingLastPathComponent()
        try ChildProcess.start(process)
        let deadline = ContinuousClock.now + .seconds(10)
        var written: [Int] = []
        while written.count != 2, process.isRunning, ContinuousClock.now < deadline {
            written = ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").split(separator: " ").compactMap { Int($0) }
            if written.count != 2 { Thread.sleep(forTimeInterval: 0.02) }
        }
        guard written.count == 2 else {
            process.terminate()
            throw SandboxError("\(what) did not start")
        }
        port = written[0]
        // `python3` may run under a launcher (pyenv's shim): stop the interpreter itself.
        serverProcessID = Int32(written[1])
    }

    deinit { stop() }

    func stop() {
        kill(serverProcessID, SIGKILL)
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
