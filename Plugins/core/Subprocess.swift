import Foundation
import SwitchyardCore
import SwitchyardPluginKit

#if canImport(Glibc)
    import Glibc
#endif

/// A program whose standard output lines become envelopes (`core.Line`, or `json` with the
/// json codec), restarted after it exits. While a route is full the program's output is not
/// read, so its pipe fills and it blocks: backpressure. Like Benthos' `subprocess` input: the program owns the
/// schedule (`while sleep 5; do …; done`), the router owns delivery.
final class Subprocess: Sendable {
    /// How output lines become envelopes.
    enum Codec: String {
        case lines, json
    }

    /// Owns the running program's pid (0: none), so a stop never misses a program being started.
    private let gate: SourceGate<pid_t>
    /// Signalled once when the reader thread has returned: stop() waits for it, so the thread
    /// makes no host call after stop() (ABI section 4). Set by start() and cleared by stop(),
    /// both on the router's control thread.
    private let readerFinished = Locked<DispatchSemaphore?>(nil)
    /// Written to by stop(): wakes a reader blocked on the program's output (a program that
    /// left a child holding the pipe open would otherwise keep it there). Both ends are
    /// close-on-exec and non-blocking; closed in deinit.
    private let wake: (read: Int32, write: Int32)
    private let context: PluginContext
    private let command: [String]
    /// The program's working directory (the route file's folder by default).
    private let directory: String
    private let codec: Codec
    private let restartDelay: Double

    init(context: PluginContext, command: [String], directory: String, codec: Codec, restartDelay: Double) {
        self.context = context
        self.command = command
        self.directory = directory
        self.codec = codec
        self.restartDelay = restartDelay
        gate = SourceGate(context: context, port: "stdout", owned: 0)
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
        }
        wake = (ends[0], ends[1])
    }

    deinit {
        if wake.read >= 0 { close(wake.read) }
        if wake.write >= 0 { close(wake.write) }
    }

    func start() {
        let finished = DispatchSemaphore(value: 0)
        readerFinished.withLock { $0 = finished }
        let thread = Thread { [self] in
            defer { finished.signal() }
            run()
        }
        thread.name = "core.subprocess"
        thread.start()
    }

    /// Stops reading, ends the program's process group (SIGTERM, SIGKILL after
    /// ``killGrace``) and waits for the reader thread to return.
    func stop() {
        var pid: pid_t = 0
        gate.stop { child in
            pid = child
            if pid > 0 { kill(-pid, SIGTERM) }
        }
        if wake.write >= 0 { _ = write(wake.write, "x", 1) }
        if pid > 0 {
            // A program that ignores SIGTERM does not outlive the router (nor hold up stop).
            let stoppedPid = pid
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.killGrace) { [self] in
                gate.withLock { _, child in
                    if child == stoppedPid { kill(-stoppedPid, SIGKILL) }
                }
            }
        }
        readerFinished.withLock { finished in
            finished?.wait()
            finished = nil
        }
    }

    /// Held from creating a pipe to spawning, so no two subprocess sources interleave there.
    private static let spawnLock = NSLock()

    /// How long a stopped program has to exit before it is killed.
    static let killGrace: DispatchTimeInterval = .seconds(5)
    /// The longest output line taken; longer ones are dropped (and counted).
    static let maximumLine = 1 << 20

    func resume() { gate.resume() }

    private func run() {
        let display = command.joined(separator: " ")
        while !gate.isStopped {
            do {
                let status = try runOnce()
                if gate.isStopped { return }
                context.log(.warning, "subprocess '\(display)' exited (\(status)); restarting in \(restartDelay) s")
            } catch {
                if gate.isStopped { return }
                context.log(.error, "subprocess '\(display)': \(error); retrying in \(restartDelay) s")
            }
            context.metric(.counter, "subprocess_restarts_total", 1)
            guard gate.sleep(until: .now + .milliseconds(Int64(restartDelay * 1000))) else { return }
        }
    }

    /// Spawns the program, emits its lines until its output ends, reaps it; its exit status text.
    private func runOnce() throws -> String {
        let (pid, output) = try spawn()
        context.log(.info, "subprocess '\(command.joined(separator: " "))' started (pid \(pid))")
        readLines(from: output)
        close(output)
        // Wait for the exit without reaping, forget the pid, then reap: a stop in between must
        // not signal a process group that a new process may have taken over.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
        gate.withLock { _, child in child = 0 }
        var status: Int32 = 0
        var reaped: pid_t
        repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
        guard reaped == pid else { return "unknown status (\(String(cString: strerror(errno))))" }
        let signal = status & 0x7f
        return signal == 0 ? "status \((status >> 8) & 0xff)" : "signal \(signal)"
    }

    /// Starts the program with its standard output on a new pipe; its pid and the read end.
    private func spawn() throws -> (pid: pid_t, output: Int32) {
        // Close-on-exec, so no other program started meanwhile inherits an end of this pipe
        // (Glibc's module has no pipe2; the spawn lock keeps this instance's siblings out).
        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw PluginError("pipe: \(String(cString: strerror(errno)))") }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        guard let addChdir = Self.addChdir, addChdir(&actions, directory) == 0 else {
            close(pipeEnds[0])
            close(pipeEnds[1])
            throw PluginError("cannot start \(command[0]) in \(directory): this C library cannot set a spawned program's working directory")
        }
        // dup2 clears close-on-exec on fd 1 (glibc does so even when the write end is fd 1).
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        // The router blocks signals it handles itself; the program gets the defaults.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // Its own process group, so stopping ends what it started too (a shell's `sleep`).
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let arguments = command.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = gate.withLock { stopped, child in
            let result = stopped ? ECANCELED : posix_spawnp(&pid, command[0], &actions, &attributes, arguments, environ)
            if result == 0 { child = pid }
            return result
        }
        close(pipeEnds[1])
        guard spawned == 0 else {
            close(pipeEnds[0])
            throw PluginError("cannot start \(command[0]) in \(directory): \(String(cString: strerror(spawned)))")
        }
        return (pid, pipeEnds[0])
    }

    private func readLines(from descriptor: Int32) {
        var pending: [UInt8] = []
        var lineNumber = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        var skipping = false
        func take(_ line: [UInt8]) -> Bool {
            lineNumber += 1
            guard let envelope = envelope(line, number: lineNumber) else { return true }
            return gate.emit(envelope)
        }
        while true {
            guard waitForOutput(descriptor) else { return }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                // A last line without a newline still counts.
                if !pending.isEmpty, !skipping { _ = take(pending) }
                return
            }
            pending.append(contentsOf: buffer[0..<count])
            var start = 0
            while let end = pending[start...].firstIndex(of: 0x0A) {
                let line = Array(pending[start..<end])
                start = end + 1
                if skipping {
                    skipping = false
                    continue
                }
                guard take(line) else { return }
            }
            pending.removeFirst(start)
            if pending.count > Self.maximumLine {
                lineNumber += 1
                context.log(
                    .warning,
                    "subprocess '\(command.joined(separator: " "))' output line \(lineNumber) is over \(Self.maximumLine) bytes: dropped")
                context.metric(.counter, "subprocess_invalid_lines_total", 1)
                pending.removeAll(keepingCapacity: true)
                skipping = true
            }
        }
    }

    /// Waits until `descriptor` can be read; false when stop() woke the reader instead.
    private func waitForOutput(_ descriptor: Int32) -> Bool {
        var watched = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&watched, nfds_t(watched.count), -1)
            if ready < 0, errno == EINTR { continue }
            if ready < 0 || watched[1].revents != 0 { return false }
            return true
        }
    }

    private func envelope(_ line: [UInt8], number: Int) -> Envelope? {
        let subject = command[0]
        switch codec {
        case .lines:
            return Envelope(type: "core.Line", subject: subject, contentType: "text/plain", body: line)
        case .json:
            guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) else { return nil }
            do {
                let value = try JSONValue(parsing: line)
                return Envelope(type: "json", subject: subject, body: value.serializedBytes())
            } catch {
                context.log(.warning, "subprocess '\(command.joined(separator: " "))' output line \(number) is not JSON: \(error)")
                context.metric(.counter, "subprocess_invalid_lines_total", 1)
                return nil
            }
        }
    }
}

extension Subprocess {
    typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29+): Swift's Glibc module declares it
    /// only under `_GNU_SOURCE`, so it is looked up once by name. `chdir` in the router itself
    /// would move every thread.
    static let addChdir: AddChdir? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np").map {
        unsafeBitCast($0, to: AddChdir.self)
    }
}
