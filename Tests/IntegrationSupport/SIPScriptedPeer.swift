import Foundation
import Testing

/// A SIP peer on a loopback UDP socket that answers what a real one (Kamailio) cannot be made
/// to send: each distinct request (by its top Via branch) gets the answer `script` gives for
/// its index; retransmissions get the same bytes again; nil leaves it unanswered.
final class SIPScriptedPeer {
    /// The socket's port.
    let port: UInt16
    private let state: State

    /// Requests seen, in order, and the answer given to each branch.
    private final class State: @unchecked Sendable {
        // `requests`, `answers` and `stopped` are only touched while `condition` is locked.
        let condition = NSCondition()
        var requests: [String] = []
        var answers: [String: [UInt8]] = [:]
        var stopped = false
    }

    init(script: @escaping @Sendable (_ request: String, _ index: Int) -> String?) throws {
        // The reader wakes every 100 ms (the read timeout) to see whether the peer was stopped.
        let (descriptor, port) = try LoopbackPort.bound(SOCK_DGRAM)
        self.port = port
        let state = State()
        self.state = state
        let thread = Thread {
            defer { close(descriptor) }
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                var sender = sockaddr_in()
                var senderLength = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = withUnsafeMutablePointer(to: &sender) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(descriptor, &buffer, buffer.count, 0, $0, &senderLength)
                    }
                }
                state.condition.lock()
                if state.stopped {
                    state.condition.unlock()
                    return
                }
                guard count > 0 else {
                    state.condition.unlock()
                    continue
                }
                let request = String(decoding: buffer.prefix(count), as: UTF8.self)
                let branch = Self.branch(of: request)
                var answer = state.answers[branch]
                if answer == nil {
                    let index = state.requests.count
                    state.requests.append(request)
                    answer = script(request, index).map { Array($0.utf8) } ?? []
                    state.answers[branch] = answer
                    state.condition.broadcast()
                }
                state.condition.unlock()
                guard let answer, !answer.isEmpty else { continue }
                _ = withUnsafePointer(to: &sender) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(descriptor, answer, answer.count, 0, $0, senderLength) }
                }
            }
        }
        thread.start()
    }

    deinit {
        state.condition.lock()
        state.stopped = true
        state.condition.unlock()
    }

    /// The distinct requests so far.
    var requests: [String] {
        state.condition.lock()
        defer { state.condition.unlock() }
        return state.requests
    }

    /// Waits (at most `timeout`) until `count` distinct requests came; returns those there are.
    func waitForRequests(_ count: Int, timeout: Duration = .seconds(20)) -> [String] {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds))
        state.condition.lock()
        defer { state.condition.unlock() }
        while state.requests.count < count, state.condition.wait(until: deadline) {}
        return state.requests
    }

    /// The branch of a request's first Via.
    static func branch(of request: String) -> String {
        let via = header("Via", in: request) ?? ""
        guard let range = via.range(of: "branch=") else { return via }
        return String(via[range.upperBound...].prefix { $0 != ";" && $0 != "," && $0 != " " })
    }

    /// The value of the first `name` field of a message.
    static func header(_ name: String, in message: String) -> String? {
        for line in message.split(separator: "\r\n", omittingEmptySubsequences: false) {
            if line.isEmpty { return nil }
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { continue }
            return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// A response to `request`: its Via, From, To (with a tag), Call-ID and CSeq (or `cseq`),
    /// then `extra` header lines.
    static func response(to request: String, _ statusLine: String, cseq: String? = nil, extra: [String] = []) -> String {
        var lines = ["SIP/2.0 " + statusLine]
        for line in request.split(separator: "\r\n") where line.lowercased().hasPrefix("via:") { lines.append(String(line)) }
        lines.append("From: " + (header("From", in: request) ?? ""))
        lines.append("To: " + (header("To", in: request) ?? "") + ";tag=scripted")
        lines.append("Call-ID: " + (header("Call-ID", in: request) ?? ""))
        lines.append("CSeq: " + (cseq ?? header("CSeq", in: request) ?? ""))
        lines += extra
        lines.append("Content-Length: 0")
        return lines.joined(separator: "\r\n") + "\r\n\r\n"
    }
}
