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
        // accept and recv wake every 100 ms (the read timeout) to see whether the peer was stopped.
        let (listener, port) = try LoopbackPort.bound(SOCK_STREAM)
        self.port = port
        let state = State()
        self.state = state
        let thread = Thread {
            defer { close(listener) }
            while !Self.isStopped(state) {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { continue }
                var wake = LoopbackPort.readWake
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
