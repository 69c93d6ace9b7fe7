import Foundation

/// A SIP peer on a loopback TCP port that reads each request's header and closes the
/// connection without answering: what a registrar that stops, or restarts, between a request
/// and its answer looks like from the client. Kamailio cannot be made to do it on cue.
final class SIPClosingTCPPeer {
    /// The listening port.
    let port: UInt16
    private let state: State

    /// The requests read so far (their start lines), in order.
    private final class State: @unchecked Sendable {
        // `startLines` and `stopped` are only touched while `condition` is locked.
        let condition = NSCondition()
        var startLines: [String] = []
        var stopped = false
    }

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw SandboxError("socket failed") }
        var address = LoopbackPort.loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        guard bound == 0, named == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw SandboxError("cannot listen on a loopback TCP port")
        }
        port = UInt16(bigEndian: address.sin_port)
        // accept and recv wake every 100 ms to see whether the peer was stopped.
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let state = State()
        self.state = state
        let thread = Thread {
            defer { close(listener) }
            while !Self.isStopped(state) {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { continue }
                var wake = timeval(tv_sec: 0, tv_usec: 100_000)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &wake, socklen_t(MemoryLayout<timeval>.size))
                if let header = Self.readHeader(connection, state: state) {
                    state.condition.lock()
                    state.startLines.append(String(header.prefix { $0 != "\r" }))
                    state.condition.broadcast()
                    state.condition.unlock()
                }
                close(connection)
            }
        }
        thread.start()
    }

    deinit {
        state.condition.lock()
        state.stopped = true
        state.condition.unlock()
    }

    /// Waits (at most `timeout`) until `count` requests were read; returns their start lines.
    func waitForRequests(_ count: Int, timeout: Duration = .seconds(20)) -> [String] {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        state.condition.lock()
        defer { state.condition.unlock() }
        while state.startLines.count < count, state.condition.wait(until: deadline) {}
        return state.startLines
    }

    private static func isStopped(_ state: State) -> Bool {
        state.condition.lock()
        defer { state.condition.unlock() }
        return state.stopped
    }

    /// The bytes up to the blank line that ends a request's header (at most 64 KiB).
    private static func readHeader(_ connection: Int32, state: State) -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < 65536, !isStopped(state) {
            let count = recv(connection, &buffer, buffer.count, 0)
            if count == 0 { return nil }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return nil
            }
            received += buffer.prefix(count)
            let text = String(decoding: received, as: UTF8.self)
            if text.contains("\r\n\r\n") { return text }
        }
        return nil
    }
}
