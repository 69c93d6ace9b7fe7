import Foundation

/// Starting the processes a test runs (brokers, registrars, Python servers, routers, buses) so
/// that they die with the test run — even when the test runner itself is killed with SIGKILL
/// and no cleanup code runs.
///
/// Each child is started through `setpriv --pdeathsig …` (util-linux), which sets the
/// parent-death signal between fork and exec, something Foundation's `Process` cannot do. The
/// kernel sends that signal when the child's parent *thread* exits, and `Process` spawns from
/// the calling thread: so every child is spawned from one launcher thread that lives as long as
/// the test process, never from a test's (or a dispatch worker's) thread, which may end while
/// the child should live on. The launcher thread also has an empty signal mask: a child
/// inherits the mask of the thread that spawns it, and dispatch worker threads block SIGTERM
/// and most other signals (Mosquitto, which only unblocks what it found unblocked, would never
/// see a SIGTERM).
enum ChildProcess {
    /// How a child is tied to the test run.
    enum Tie {
        /// The process itself gets SIGKILL when the test run ends (it keeps its pid).
        case process
        /// For peers that fork workers (Kamailio, whose workers outlive a killed main process):
        /// the process runs under a shell that gets SIGTERM when the test run ends and then
        /// kills its whole process group — the peer and every worker it forked. Foundation's
        /// `Process` makes each child the leader of a process group of its own, so that group
        /// is the peer's alone. `process` is the shell, which waits for the peer and exits with
        /// its status; signal the group with `kill(-pid, …)`.
        case processGroup
    }

    static let setpriv = "/usr/bin/setpriv"

    /// `executable arguments` as the command that ties it to the test run; as `user` when
    /// given (setpriv changes the user first: a change of user would clear the signal).
    static func command(
        _ executable: String, _ arguments: [String], tie: Tie = .process, user: String? = nil
    ) -> (executable: String, arguments: [String]) {
        let identity = user.map { ["--reuid", $0, "--regid", $0, "--clear-groups"] } ?? []
        switch tie {
        case .process:
            return (setpriv, identity + ["--pdeathsig", "KILL", "--", executable] + arguments)
        case .processGroup:
            // `kill 0` signals the shell's own process group. (Not `setsid`: in a group leader it
            // forks, and the fork loses the parent-death signal.)
            let supervisor = #"trap 'kill -KILL 0' TERM; "$@" & wait $!"#
            return (setpriv, identity + ["--pdeathsig", "TERM", "--", "/bin/sh", "-c", supervisor, "peer-group", executable] + arguments)
        }
    }

    /// Starts `process` (its executable and arguments as set) tied to the test run; throws
    /// when it cannot be started within `timeout`.
    ///
    /// A child never runs in the runner's working directory (the package root), where whatever
    /// it writes — a pid file, a history, a core dump — would land among the sources: a caller
    /// sets the test's folder as `currentDirectoryURL`, and a child started without one (or with
    /// the runner's) runs in a fresh empty folder of its own, removed when it ends.
    static func start(_ process: Process, tie: Tie = .process, user: String? = nil, timeout: Duration = .seconds(10)) throws {
        // Foundation reports the runner's own directory for a process given none.
        let runnerDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true).standardizedFileURL.path
        if process.currentDirectoryURL.map({ $0.standardizedFileURL.path == runnerDirectory }) ?? true {
            try runInFolderOfItsOwn(process)
        }
        if let executable = process.executableURL?.path {
            (process.executableURL, process.arguments) = {
                let tied = command(executable, process.arguments ?? [], tie: tie, user: user)
                return (URL(fileURLWithPath: tied.executable), tied.arguments)
            }()
        }
        let box = SpawnBox(process)
        Launcher.shared.perform { box.run() }
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        guard box.done.wait(timeout: .now() + .milliseconds(Int(milliseconds))) == .success else {
            throw SandboxError("\(process.executableURL?.path ?? "?") did not start within \(timeout)")
        }
        if let error = box.error { throw error }
    }

    /// Gives `process` a fresh working folder under the temporary directory, removed once the
    /// process has ended (before any termination handler the caller had set runs).
    private static func runInFolderOfItsOwn(_ process: Process) throws {
        var template = Array((NSTemporaryDirectory() + "switchyard-child-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw SandboxError("cannot make a working folder for a child: errno \(errno)") }
        let folder = URL(fileURLWithPath: String(cString: made), isDirectory: true)
        process.currentDirectoryURL = folder
        let earlier = process.terminationHandler
        process.terminationHandler = { ended in
            try? FileManager.default.removeItem(at: folder)
            earlier?(ended)
        }
    }

    /// The process and the outcome of `run()`, handed between two threads.
    private final class SpawnBox: @unchecked Sendable {
        // `process` is used by the launcher thread only until `done` is signalled; `error` is
        // written before `done` is signalled and read after.
        let process: Process
        let done = DispatchSemaphore(value: 0)
        var error: (any Error)?

        init(_ process: Process) { self.process = process }

        func run() {
            do { try process.run() } catch { self.error = error }
            done.signal()
        }
    }

    /// The thread every child is spawned from: started once, never ends.
    private final class Launcher: @unchecked Sendable {
        static let shared = Launcher()

        // `jobs` is touched only under `condition`'s lock.
        private let condition = NSCondition()
        private var jobs: [@Sendable () -> Void] = []

        private init() {
            // No peer or router a test starts leaves a core dump (children inherit the limit):
            // a crash is reported by the test, not by a file in whichever folder it ran in.
            var noCores = rlimit()
            getrlimit(Int32(RLIMIT_CORE.rawValue), &noCores)
            noCores.rlim_cur = 0
            setrlimit(Int32(RLIMIT_CORE.rawValue), &noCores)
            let thread = Thread { [self] in
                var nothing = sigset_t()
                sigemptyset(&nothing)
                pthread_sigmask(SIG_SETMASK, &nothing, nil)
                while true {
                    condition.lock()
                    while jobs.isEmpty { condition.wait() }
                    let next = jobs.removeFirst()
                    condition.unlock()
                    next()
                }
            }
            thread.name = "child-process-launcher"
            thread.start()
        }

        func perform(_ job: @escaping @Sendable () -> Void) {
            condition.lock()
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }
    }
}
