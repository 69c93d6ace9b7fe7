import Foundation
import Testing

/// A TCP client that writes exactly the bytes a test gives it: for requests an ordinary HTTP
/// client refuses to send (a forged `Host`, a half-sent header, a lying `Content-Length`).
final class RawSocket {
    private let descriptor: Int32

    /// Connects to `host:port` (IPv4) from the loopback address `source` when given (another
    /// peer to the server), failing the test when nothing listens.
    init(host: String = "127.0.0.1", port: Int, from source: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0, "socket: \(errno)", sourceLocation: sourceLocation)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound != 0 { close(descriptor) }
            try #require(bound == 0, "bind to \(source): errno \(errno)", sourceLocation: sourceLocation)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 { close(descriptor) }
        try #require(connected == 0, "connect to \(host):\(port): errno \(errno)", sourceLocation: sourceLocation)
        // Every read is bounded: a test never hangs on a peer that says nothing.
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// A slow-loris client: `count` connections to `port` from the loopback addresses
    /// 127.0.0.2, .3, … (`addresses` of them, in turn), each sending `head` — half a request
    /// head — and then nothing. They stay open until the array is let go.
    static func slowHeads(_ count: Int, port: Int, addresses: Int, head: String) throws -> [RawSocket] {
        try (0..<count).map { index in
            let socket = try RawSocket(port: port, from: "127.0.0.\(2 + index % addresses)")
            socket.write(head)
            return socket
        }
    }

    /// Writes all of `text`; false when the peer has closed.
    @discardableResult
    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    /// Writes all of `bytes`; false when the peer has closed.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// Reads until the peer closes (or 15 s pass without a byte).
    func readToEnd() -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads one HTTP response whose body has a `Content-Length` (the connection stays open),
    /// or what came before the peer closed or 15 s passed without a byte.
    func readResponse() -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !Self.isCompleteResponse(received) {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    private static func isCompleteResponse(_ bytes: [UInt8]) -> Bool {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let end = (0...(bytes.count - 4)).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) })
        else { return false }
        let head = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
        let length =
            head.split(separator: "\r\n").lazy.compactMap { line -> Int? in
                guard line.hasPrefix("content-length:") else { return nil }
                return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        return bytes.count - (end + 4) >= length
    }

    /// Sends one HTTP/1.1 request with `Connection: close` and returns the status code and the
    /// whole answer.
    static func http(
        port: Int, _ method: String, _ path: String, headers: [String: String], sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (status: Int, text: String) {
        let connection = try RawSocket(port: port, sourceLocation: sourceLocation)
        var request = "\(method) \(path) HTTP/1.1\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "Content-Length: 0\r\nConnection: close\r\n\r\n"
        connection.write(request)
        let answer = connection.readToEnd()
        let status = answer.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? -1
        return (status, answer)
    }
}
