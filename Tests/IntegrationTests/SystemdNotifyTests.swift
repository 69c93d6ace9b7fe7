import Foundation
import Testing

@testable import IntegrationSupport

/// `run` under a `Type=notify` unit: the datagrams systemd would read from `NOTIFY_SOCKET`.
@Suite(.timeLimit(.minutes(1)))
struct SystemdNotifyTests {
    @Test func theRouterTellsSystemdWhenItIsReadyReloadsAndStops() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1h } }
              out: { plugin: core, console: {} }
            routes:
              - { from: clock.tick, to: out.print }
            """)
        let socket = try NotifySocket(path: sandbox.path("notify"))
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root,
            environment: ["NOTIFY_SOCKET": socket.path])
        #expect(socket.receive() == "READY=1\nSTATUS=routing: 2 instances, 1 routes")
        router.send(signal: SIGHUP)
        let reloading = socket.receive()
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="), "\(reloading)")
        #expect(socket.receive() == "READY=1\nSTATUS=reload applied")
        router.send(signal: SIGTERM)
        #expect(socket.receive() == "STOPPING=1\nSTATUS=draining")
        #expect(router.waitForExit() == 0)
    }
}

/// A datagram socket bound where `NOTIFY_SOCKET` points, as systemd's; reads are bounded.
final class NotifySocket {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw SandboxError("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            close(descriptor)
            throw SandboxError("cannot bind \(path): errno \(errno)")
        }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// The next datagram, or "" when none comes within 20 s.
    func receive() -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : ""
    }
}
