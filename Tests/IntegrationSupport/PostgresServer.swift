import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A private PostgreSQL 15 server (Debian's `postgresql` package) for one test: its own
/// cluster in a temporary folder, on a free loopback port, SCRAM password authentication and a
/// `switchyard` database; tied to the test run like every peer, removed by ``stop()``.
/// As root (CI) it runs as the `postgres` user, as PostgreSQL insists.
final class PostgresServer {
    static let binaries = "/usr/lib/postgresql/15/bin"
    let port: UInt16
    let password: String
    let directory: String
    private let process = Process()
    private let log = OutputBuffer()
    private var reader: PipeReader?
    private let user: String?

    /// The URL a router's `store.url` takes (no TLS: the test cluster has no certificate).
    var url: String { url(host: "127.0.0.1") }

    /// The URL through another address the server listens on.
    func url(host: String) -> String { "postgres://switchyard:\(password)@\(host):\(port)/switchyard?sslmode=disable" }

    /// Starts a server listening on 127.0.0.1 and on `addresses` (veth ends a test made; clients
    /// on their subnets may sign in with the password too).
    init(addresses: [String] = []) throws {
        var template = Array("/tmp/switchyard-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SandboxError("mkdtemp: errno \(errno)") }
        directory = String(cString: made)
        password = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        user = getuid() == 0 ? "postgres" : nil
        try password.write(toFile: directory + "/password", atomically: true, encoding: .utf8)
        if let user {
            guard let account = getpwnam(user) else { throw SandboxError("no '\(user)' user: is the postgresql package installed?") }
            for path in [directory, directory + "/password"] { chown(path, account.pointee.pw_uid, account.pointee.pw_gid) }
        }
        let initdb = try Tool.run(
            Self.binaries + "/initdb",
            [
                "-D", directory + "/data", "-U", "switchyard", "--auth=scram-sha-256", "--pwfile=\(directory)/password", "-E", "UTF8",
                "--no-sync", "--no-instructions",
            ], user: user, directory: directory, timeout: .seconds(60))
        guard initdb.status == 0 else { throw SandboxError("initdb failed:\n\(initdb.output)") }
        if !addresses.isEmpty {
            let hba = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/pg_hba.conf"))
            try hba.seekToEnd()
            try hba.write(contentsOf: Data("host all all samenet scram-sha-256\n".utf8))
            try hba.close()
        }
        port = try LoopbackPort.free()
        process.executableURL = URL(fileURLWithPath: Self.binaries + "/postgres")
        process.arguments = [
            "-D", directory + "/data", "-p", "\(port)", "-k", directory, "-c",
            "listen_addresses=\((["127.0.0.1"] + addresses).joined(separator: ","))", "-c", "fsync=off",
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        reader = PipeReader(pipe, into: log)
        process.currentDirectoryURL = URL(fileURLWithPath: directory, isDirectory: true)
        try ChildProcess.start(process, user: user)
        let deadline = ContinuousClock.now + .seconds(30)
        while !log.text.contains("ready to accept connections"), process.isRunning, ContinuousClock.now < deadline {
            usleep(20_000)
        }
        guard log.text.contains("ready to accept connections") else {
            stop()
            throw SandboxError("postgres did not start:\n\(log.text)")
        }
        let created = try Tool.run(
            "/usr/bin/psql", connection(database: "postgres") + ["-q", "-c", "CREATE DATABASE switchyard"],
            environment: passwordEnvironment,
            timeout: .seconds(30))
        guard created.status == 0 else {
            stop()
            throw SandboxError("CREATE DATABASE failed:\n\(created.output)")
        }
    }

    deinit { stop() }

    /// psql's arguments for `database` (the password goes in its environment, not its arguments).
    private func connection(database: String) -> [String] {
        ["-X", "-h", "127.0.0.1", "-p", "\(port)", "-U", "switchyard", "-d", database]
    }

    private var passwordEnvironment: [String: String] { ProcessInfo.processInfo.environment.merging(["PGPASSWORD": password]) { $1 } }

    /// Runs `sql` in the `switchyard` database with psql; returns its unaligned, tuples-only output.
    @discardableResult
    func psql(_ sql: String) throws -> String {
        let result = try Tool.run(
            "/usr/bin/psql", connection(database: "switchyard") + ["-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
            environment: passwordEnvironment)
        guard result.status == 0 else { throw SandboxError("psql \(sql): \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The server's log so far.
    var logText: String { log.text }

    /// Stops the server (fast shutdown, then SIGKILL) and removes its folder.
    func stop() {
        defer { reader?.stop() }
        if process.isRunning {
            kill(process.processIdentifier, SIGINT)
            let deadline = ContinuousClock.now + .seconds(10)
            while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
