import Foundation

/// One UDP datagram out, the answer (if any) back.
enum UDPExchange {
    static func send(_ bytes: [UInt8], to port: UInt16, expectAnswer: Bool = true) throws -> String {
        let sock = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sock) }
        var timeout = timeval(tv_sec: expectAnswer ? 5 : 0, tv_usec: expectAnswer ? 0 : 300_000)
        setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = LoopbackPort.loopbackAddress(port: port)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(sock, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == bytes.count else { throw SandboxError("sendto failed") }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let received = recv(sock, &buffer, buffer.count, 0)
        return received > 0 ? String(decoding: buffer.prefix(received), as: UTF8.self) : ""
    }
}
