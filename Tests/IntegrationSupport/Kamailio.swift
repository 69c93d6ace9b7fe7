import Foundation
import Testing

/// A real Kamailio 5.6 per test: registrar (usrloc in memory) and MESSAGE relay for the domain
/// `example.test`, digest authentication from a db_text subscriber table (`calculate_ha1`),
/// UDP and TCP on one loopback port and optionally TLS on another. Everything lives in a
/// temporary directory; the process is killed on deinit.
final class Kamailio {
    struct Options {
        /// `SHA-256` switches the whole server to SHA-256 digests (one algorithm at a time).
        var algorithm = "MD5"
        var tls = false
        /// Users of the subscriber table.
        var users: [(name: String, password: String)] = [("alice", "alice-secret")]
        /// REGISTER expiries below this are raised to it.
        var minimumExpires = 5
        /// The UDP/TCP port; a free one when nil (a restart passes the old one).
        var port: UInt16?
    }

    static let domain = "example.test"

    let directory: URL
    let port: UInt16
    let tlsPort: UInt16?
    private let process = Process()
    private let output = OutputBuffer()
    private let pipe = Pipe()
    private var reader: PipeReader?

    init(_ options: Options = Options()) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kamailio-\(UUID().uuidString)")
        let database = directory.appendingPathComponent("db")
        for folder in [directory, database] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        port = try options.port ?? LoopbackPort.freeForUDPAndTCP()
        tlsPort = options.tls ? try LoopbackPort.free() : nil
        try "table_name(str) table_version(int)\nsubscriber:7\nlocation:9\n"
            .write(to: database.appendingPathComponent("version"), atomically: true, encoding: .utf8)
        let rows = options.users.enumerated().map { "\($0.offset + 1):\($0.element.name):\(Self.domain):\($0.element.password)::" }
        try (["id(int,auto) username(str) domain(str) password(str) ha1(str,null) ha1b(str,null)"] + rows).joined(separator: "\n")
            .appending("\n").write(to: database.appendingPathComponent("subscriber"), atomically: true, encoding: .utf8)
        if options.tls {
            try TestCertificates.write(in: directory)
            try """
            [server:default]
            method = TLSv1.2+
            verify_certificate = no
            require_certificate = no
            certificate = \(directory.path)/server.pem
            private_key = \(directory.path)/server.key

            [client:default]
            method = TLSv1.2+
            verify_certificate = no
            require_certificate = no

            """.write(to: directory.appendingPathComponent("tls.cfg"), atomically: true, encoding: .utf8)
        }
        try Self.configuration(options, port: port, tlsPort: tlsPort, directory: directory)
            .write(to: directory.appendingPathComponent("kamailio.cfg"), atomically: true, encoding: .utf8)

        try launch()
    }

    /// Kamailio with an example's configuration file and db_text folder: `5060` in it becomes
    /// a free port, and `SIP_DB_URL` names a copy of the folder.
    init(example configuration: URL, database: URL) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kamailio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try LoopbackPort.freeForUDPAndTCP()
        tlsPort = nil
        try FileManager.default.copyItem(at: database, to: directory.appendingPathComponent("db"))
        try String(contentsOf: configuration, encoding: .utf8).replacingOccurrences(of: ":5060", with: ":\(port)")
            .write(to: directory.appendingPathComponent("kamailio.cfg"), atomically: true, encoding: .utf8)
        try launch(environment: ["SIP_DB_URL": "text://" + directory.appendingPathComponent("db").path])
    }

    private func launch(environment: [String: String] = [:]) throws {
        // Under a shell that waits for it (the process-group tie): Kamailio closes the
        // descriptors it inherits, and Foundation takes a closed one for the child's exit and
        // blocks in waitpid on it — which stops every other Process from being reaped. Its
        // workers survive a killed main process: the group is killed as a whole.
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/kamailio")
        process.arguments = [
            "-f", directory.appendingPathComponent("kamailio.cfg").path, "-DD", "-E", "-Y", directory.path, "-w", directory.path,
            "-P", directory.appendingPathComponent("kamailio.pid").path, "-x", "tlsf", "-m", "64", "-M", "8",
        ]
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        reader = PipeReader(pipe, into: output)
        try ChildProcess.start(process, tie: .processGroup)
        let deadline = ContinuousClock.now + .seconds(15)
        while !LoopbackPort.acceptsConnections(port) || (tlsPort.map { !LoopbackPort.acceptsConnections($0) } ?? false) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw SandboxError("kamailio did not listen on \(port) within 15 s:\n\(log)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    deinit { stop() }

    /// What Kamailio logged (the script logs each request as `REQ METHOD from … to … via PROTO`).
    var log: String { output.text }

    /// Waits until the log holds `needle` `count` times; false on timeout.
    @discardableResult
    func waitForLog(_ needle: String, count: Int = 1, timeout: Duration = .seconds(15)) -> Bool {
        output.waitFor(needle, count: count, timeout: timeout)
    }

    func stop() {
        guard process.isRunning else { return }
        // Kamailio and its children, found by their configuration file; then the shell.
        let configuration = directory.appendingPathComponent("kamailio.cfg").path
        _ = try? Tool.run("/usr/bin/pkill", ["-TERM", "-f", configuration], timeout: .seconds(5))
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        _ = try? Tool.run("/usr/bin/pkill", ["-KILL", "-f", configuration], timeout: .seconds(5))
        if process.isRunning { kill(-process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        reader?.stop()
    }

    /// The script: REGISTER and MESSAGE from local users are authenticated (401 and 407);
    /// MESSAGE to a local user is looked up in the location table; anything else addressed
    /// elsewhere is relayed statefully.
    private static func configuration(_ options: Options, port: UInt16, tlsPort: UInt16?, directory: URL) -> String {
        """
        #!KAMAILIO
        debug=2
        log_stderror=yes
        log_prefix="{$mt $hdr(CSeq) $ci} "
        children=2
        tcp_children=2
        auto_aliases=no
        listen=udp:127.0.0.1:\(port)
        listen=tcp:127.0.0.1:\(port)
        \(tlsPort.map { "enable_tls=yes\nlisten=tls:127.0.0.1:\($0)" } ?? "")
        alias="\(domain)"

        mpath="/usr/lib/x86_64-linux-gnu/kamailio/modules/"
        \(tlsPort != nil ? "loadmodule \"tls.so\"\nmodparam(\"tls\", \"config\", \"\(directory.path)/tls.cfg\")" : "")
        loadmodule "tm.so"
        loadmodule "sl.so"
        loadmodule "rr.so"
        loadmodule "pv.so"
        loadmodule "maxfwd.so"
        loadmodule "textops.so"
        loadmodule "siputils.so"
        loadmodule "xlog.so"
        loadmodule "usrloc.so"
        loadmodule "registrar.so"
        loadmodule "db_text.so"
        loadmodule "auth.so"
        loadmodule "auth_db.so"

        modparam("usrloc", "db_mode", 0)
        modparam("registrar", "min_expires", \(options.minimumExpires))
        modparam("auth_db", "db_url", "text://\(directory.path)/db")
        modparam("auth_db", "calculate_ha1", yes)
        modparam("auth_db", "password_column", "password")
        modparam("auth_db", "load_credentials", "")
        modparam("auth", "algorithm", "\(options.algorithm)")

        request_route {
            if (!mf_process_maxfwd_header("10")) { sl_send_reply("483", "Too Many Hops"); exit; }
            xlog("L_NOTICE", "REQ $rm from $fu to $ru via $proto expires $hdr(Expires)\\n");
            if (is_method("REGISTER")) {
                if (!auth_check("$fd", "subscriber", "1")) { auth_challenge("$fd", "1"); exit; }
                consume_credentials();
                if (!save("location")) { sl_reply_error(); }
                exit;
            }
            if (is_method("MESSAGE")) {
                if (from_uri == myself) {
                    if (!auth_check("$fd", "subscriber", "1")) { auth_challenge("$fd", "1"); exit; }
                    consume_credentials();
                }
                if (uri == myself) {
                    if (!lookup("location")) { sl_send_reply("404", "Not Found"); exit; }
                    xlog("L_NOTICE", "RELAY $rm to $ru via $du\\n");
                }
                if (!t_relay()) { sl_reply_error(); }
                exit;
            }
            sl_send_reply("405", "Method Not Allowed");
        }

        onreply_route {
            xlog("L_NOTICE", "REPLY $rs for $rm\\n");
        }
        """
    }
}

/// SIPp (Debian's `sip-tester`) running one scenario to completion.
final class SIPp {
    let directory: URL
    private(set) var port: UInt16 = 0
    private var process = Process()
    private var output = OutputBuffer()
    private var pipe = Pipe()
    private var reader: PipeReader?

    /// Starts `sipp` with `scenario` (XML) on `port` (a free one by default); `remote` is the
    /// peer of a UAC (`127.0.0.1:5060`); `calls` is how many scenarios to run before exiting.
    init(scenario: String, port: UInt16? = nil, remote: String? = nil, transport: String = "u1", calls: Int = 1, extra: [String] = [])
        throws
    {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sipp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let scenarioFile = directory.appendingPathComponent("scenario.xml")
        try scenario.write(to: scenarioFile, atomically: true, encoding: .utf8)
        // A port picked free can be taken by another test before SIPp binds it: a UAS on a
        // port of its own choosing tries again on another.
        for attempt in 1...3 {
            if attempt > 1 {
                process = Process()
                pipe = Pipe()
                output = OutputBuffer()
            }
            self.port = try port ?? LoopbackPort.freeForUDPAndTCP()
            try launch(scenarioFile: scenarioFile, remote: remote, transport: transport, calls: calls, extra: extra)
            guard remote == nil else { return }
            // A UAS must be listening before anything is sent to it.
            let deadline = ContinuousClock.now + .seconds(10)
            let listening = { transport.hasPrefix("t") ? LoopbackPort.acceptsConnections(self.port) : Self.udpPortTaken(self.port) }
            while !listening(), process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
            guard port == nil, !process.isRunning else { return }
            process.waitUntilExit()
            _ = output.waitForEnd(timeout: .seconds(5))
            reader?.stop()
            guard output.text.contains("Address already in use") else { return }
        }
    }

    private func launch(scenarioFile: URL, remote: String?, transport: String, calls: Int, extra: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sipp")
        process.currentDirectoryURL = directory
        process.arguments =
            (remote.map { [$0] } ?? []) + [
                "-sf", scenarioFile.path, "-i", "127.0.0.1", "-p", String(self.port), "-t", transport, "-m", String(calls), "-nostdin",
                "-trace_msg", "-message_file", directory.appendingPathComponent("messages.log").path, "-trace_err",
                "-error_file", directory.appendingPathComponent("errors.log").path, "-timeout", "30s", "-timeout_error",
            ] + extra
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        reader = PipeReader(pipe, into: output)
        try ChildProcess.start(process)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        reader?.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Waits for SIPp to finish its calls; its exit status (0: every call passed), or nil on timeout.
    func waitForExit(timeout: Duration = .seconds(30)) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        guard !process.isRunning else { return nil }
        return process.terminationStatus
    }

    /// Every message SIPp sent and received (`-trace_msg`).
    var messages: String { (try? String(contentsOf: directory.appendingPathComponent("messages.log"), encoding: .utf8)) ?? "" }

    /// Its console output and error log, for failure messages.
    var diagnostics: String {
        output.text + ((try? String(contentsOf: directory.appendingPathComponent("errors.log"), encoding: .utf8)) ?? "")
    }

    /// How many requests with `method` SIPp received.
    func received(_ method: String) -> Int {
        messages.components(separatedBy: "\n").filter { $0.hasPrefix("\(method) sip:") }.count
    }

    private static func udpPortTaken(_ port: UInt16) -> Bool {
        LoopbackPort.bindError(port: port, type: SOCK_DGRAM) != nil
    }
}

extension LoopbackPort {
    /// A port free on 127.0.0.1 for TCP and UDP both (SIP listens on both).
    static func freeForUDPAndTCP() throws -> UInt16 {
        for _ in 0..<50 {
            let port = try free()
            if bindError(port: port, type: SOCK_DGRAM) == nil { return port }
        }
        throw SandboxError("no port free for both UDP and TCP on 127.0.0.1")
    }
}
