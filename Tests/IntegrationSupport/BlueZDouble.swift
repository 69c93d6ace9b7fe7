import Foundation

/// A private D-Bus daemon with the BlueZ double (python-dbusmock's bluez5 template extended by
/// `bluez_slate.py`) on it, posing as the system bus: `address` goes into
/// `DBUS_SYSTEM_BUS_ADDRESS`. Both processes die with `stop()`.
final class BlueZDouble {
    let directory: URL
    let address: String
    private let daemon: Process
    private let mock: Process

    /// The address a double started in `directory` listens on, known before it starts (a
    /// router can be pointed at it while nothing listens there yet).
    static func address(in directory: URL) -> String { "unix:path=" + directory.appendingPathComponent("bus").path }

    /// Starts the bus and the double in `folder` (a new temporary one by default).
    init(in folder: URL? = nil) throws {
        let directory = folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("bluez-double-\(UUID().uuidString)")
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
              "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(socket)</listen>
              <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
            </busconfig>
            """
        let configFile = directory.appendingPathComponent("bus.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--config-file=\(configFile.path)", "--nofork"]
        // It warns that it cannot raise its fd limit when not root-capable; nothing to act on.
        daemon.standardError = FileHandle.nullDevice
        daemon.currentDirectoryURL = directory
        try ChildProcess.start(daemon)
        address = Self.address(in: directory)
        try Self.waitFor("the bus socket") { FileManager.default.fileExists(atPath: socket) }

        let template = BuildProducts.packageRoot.appendingPathComponent("Tests/IntegrationTests/Support/bluez_slate.py").path
        mock = Process()
        // Debian's interpreter: a pyenv python does not see python3-dbusmock.
        mock.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        mock.arguments = ["-m", "dbusmock", "--system", "--template", template]
        mock.environment = ["DBUS_SYSTEM_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin"]
        mock.standardOutput = FileHandle.nullDevice
        mock.currentDirectoryURL = directory
        try ChildProcess.start(mock)
        try Self.waitFor("org.bluez on the bus") { (try? self.control("org.freedesktop.DBus.Peer.Ping", path: "/")) != nil }
    }

    deinit { stop() }

    func stop() {
        // dbusmock's GLib loop does not end on SIGTERM while idle: kill both outright.
        for process in [mock, daemon] where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Calls a method on the double with gdbus (arguments in GVariant text) and returns its output.
    @discardableResult
    func control(_ method: String, path: String = "/", _ arguments: [String] = []) throws -> String {
        let gdbus = Process()
        gdbus.executableURL = URL(fileURLWithPath: "/usr/bin/gdbus")
        gdbus.arguments = ["call", "--address", address, "--dest", "org.bluez", "--object-path", path, "--method", method] + arguments
        let output = Pipe()
        gdbus.standardOutput = output
        gdbus.standardError = output
        try ChildProcess.start(gdbus)
        gdbus.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard gdbus.terminationStatus == 0 else { throw DoubleError("gdbus \(method): \(text)") }
        return text
    }

    private static func waitFor(_ what: String, _ condition: () -> Bool) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw DoubleError("timed out waiting for \(what)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}

struct DoubleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
