import Foundation

/// A client TCP connection to a loopback port, with bounded waits.
final class TCPConnection {
    private let descriptor: Int32

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = LoopbackPort.loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw SandboxError("cannot connect to 127.0.0.1:\(port)")
        }
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8]) throws {
        guard Foundation.send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw SandboxError("send failed") }
    }

    /// What arrives within `timeout` (one read).
    func receive(timeout: Duration) -> String {
        setTimeout(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : ""
    }

    /// Whether the far side closes the connection within `timeout` (bytes before are skipped).
    func waitForClose(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            setTimeout(deadline - ContinuousClock.now)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) { return true }
            if count < 0 { return false }
        }
        return false
    }

    private func setTimeout(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var value = timeval(tv_sec: max(0, Int(seconds)), tv_usec: max(1000, Int(attoseconds / 1_000_000_000_000)))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }
}
