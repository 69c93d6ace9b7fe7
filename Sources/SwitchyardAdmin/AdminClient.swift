import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A minimal HTTP/1.1 client for the admin port (plain HTTP, which is what it serves), for CLI
/// commands such as `switchyard reload`: one request per connection, a bounded answer, a
/// bounded wait. It links no TLS library, so the `switchyard` executable stays free of one.
public struct AdminClient: Sendable {
    /// An answer: the status code and the body.
    public struct Answer: Sendable {
        /// The HTTP status code.
        public var status: Int
        /// The body (at most ``AdminClient/maximumAnswerBytes`` with the head).
        public var body: [UInt8]
    }

    /// Where to connect and what to send as `Host`.
    public let host: String
    /// The port.
    public let port: Int
    private let token: String?
    /// How long connecting, sending and reading may each take.
    public var timeout: Duration = .seconds(60)
    /// The largest answer read (head and body); a longer one is an error.
    public static let maximumAnswerBytes = 4 << 20

    /// `http://host:port`, `host:port` or `[v6]:port`; `token` is sent as a bearer token.
    public init(address: String, token: String?) throws(AdminError) {
        var text = Substring(address.trimmingCharacters(in: .whitespaces))
        if text.lowercased().hasPrefix("https://") {
            throw AdminError(description: "'\(address)': the admin port serves plain HTTP (put a TLS proxy in front for remote access)")
        }
        if text.lowercased().hasPrefix("http://") { text = text.dropFirst(7) }
        if let slash = text.firstIndex(of: "/") { text = text[..<slash] }
        guard let configuration = AdminServer.Configuration(address: String(text)), configuration.port > 0,
            text.contains(":")
        else {
            throw AdminError(description: "'\(address)' is not an admin address such as http://127.0.0.1:9180")
        }
        host = configuration.host
        port = configuration.port
        self.token = token.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Sends `POST path` with an empty body and reads the answer.
    public func post(_ path: String) throws(AdminError) -> Answer {
        try exchange(method: "POST", path: path)
    }

    /// Sends `GET path` and reads the answer.
    public func get(_ path: String) throws(AdminError) -> Answer {
        try exchange(method: "GET", path: path)
    }

    /// Sends `method path` (`GET`, `POST`, `PUT`, `DELETE`) with `json` as an
    /// `application/json` body (none when nil) and reads the answer.
    public func request(_ method: String, _ path: String, json: [UInt8]? = nil) throws(AdminError) -> Answer {
        guard !method.isEmpty, method.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
            throw AdminError(description: "'\(method)' is not an HTTP method")
        }
        return try exchange(method: method, path: path, body: json)
    }

    private func exchange(method: String, path: String, body: [UInt8]? = nil) throws(AdminError) -> Answer {
        let place = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let socket = try connect(place: place)
        defer { close(socket) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(place)\r\nContent-Length: \(body?.count ?? 0)\r\nConnection: close\r\n"
        if body != nil { head += "Content-Type: application/json\r\n" }
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + (body ?? [])
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw AdminError(description: "\(place): sending failed: \(String(cString: strerror(errno)))") }
            sent += count
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else {
                throw AdminError(description: "\(place): no complete answer within \(timeout) (\(String(cString: strerror(errno))))")
            }
            answer += buffer.prefix(count)
            guard answer.count <= Self.maximumAnswerBytes else {
                throw AdminError(description: "\(place): the answer is over \(Self.maximumAnswerBytes) bytes")
            }
        }
        return try Self.parse(answer, from: place)
    }

    /// The status and body of a whole `Connection: close` answer (Content-Length or to the end).
    static func parse(_ answer: [UInt8], from place: String) throws(AdminError) -> Answer {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = answer.indices.first(where: { answer[$0...].starts(with: separator) }) else {
            throw AdminError(description: "\(place): the answer has no complete HTTP head")
        }
        let head = String(decoding: answer[..<end], as: UTF8.self).split(separator: "\r\n")
        let statusLine = head.first?.split(separator: " ") ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]), (100...599).contains(status)
        else {
            throw AdminError(description: "\(place): not an HTTP answer: \(String(head.first?.prefix(80) ?? ""))")
        }
        var body = Array(answer[(end + 4)...])
        for line in head.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { continue }
            if let length = Int(parts[1].trimmingCharacters(in: .whitespaces)), length >= 0, length < body.count {
                body = Array(body.prefix(length))
            }
        }
        return Answer(status: status, body: body)
    }

    private func connect(place: String) throws(AdminError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw AdminError(description: "\(place): cannot resolve \(host)")
        }
        defer { freeaddrinfo(found) }
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let socket = Glibc.socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard socket >= 0 else { continue }
            let (seconds, attoseconds) = timeout.components
            var limit = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(socket, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return socket }
            lastError = String(cString: strerror(errno))
            close(socket)
        }
        throw AdminError(description: "cannot connect to the admin port \(place): \(lastError)")
    }
}
