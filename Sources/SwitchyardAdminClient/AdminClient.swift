import Foundation
import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The admin port's address: `host:port`, `:port` or `port` (loopback when no host is given),
/// `[v6]:port` for IPv6. One parser for the server's `--admin` and the clients'.
public struct AdminAddress: Sendable, Hashable {
    /// The host, without IPv6 brackets.
    public var host: String
    /// The port, 0-65535.
    public var port: Int

    /// Parses `text`; nil when it is not an address.
    public init?(_ text: String) {
        let text = text.trimmingCharacters(in: .whitespaces)
        let portText: Substring
        if let colon = text.lastIndex(of: ":") {
            host = text[..<colon].isEmpty ? "127.0.0.1" : String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            portText = text[text.index(after: colon)...]
        } else {
            host = "127.0.0.1"
            portText = Substring(text)
        }
        guard let port = Int(portText), (0...65535).contains(port) else { return nil }
        self.port = port
    }
}

/// What went wrong talking to (or starting) the admin port.
public struct AdminError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    /// An error saying `description`.
    public init(description: String) { self.description = description }
}

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

    /// The environment variable commands take the admin bearer token from when `--token` is
    /// not given (a command line is visible to every user of the machine; the environment is not).
    public static let tokenVariable = "SWITCHYARD_ADMIN_TOKEN"

    /// The token a command sends: `--token`, else ``tokenVariable``.
    public static func token(option: String?, environment: [String: String]) -> String? {
        option ?? environment[tokenVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `http://host:port`, `host:port` or `[v6]:port`; `token` is sent as a bearer token.
    public init(address: String, token: String?) throws(AdminError) {
        var text = Substring(address.trimmingCharacters(in: .whitespaces))
        if text.lowercased().hasPrefix("https://") {
            throw AdminError(description: "'\(address)': the admin port serves plain HTTP (put a TLS proxy in front for remote access)")
        }
        if text.lowercased().hasPrefix("http://") { text = text.dropFirst(7) }
        if let slash = text.firstIndex(of: "/") { text = text[..<slash] }
        guard let address = AdminAddress(String(text)), address.port > 0, text.contains(":") else {
            throw AdminError(description: "'\(address)' is not an admin address such as http://127.0.0.1:9180")
        }
        host = address.host
        port = address.port
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

    /// `host:port` as the `Host` header and the error messages name it.
    private var place: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Connects and sends `method path` with `headers` (each line ending in CRLF), the bearer
    /// token and `body`; the connected socket, which the caller closes.
    private func open(_ method: String, _ path: String, headers: String, body: [UInt8] = []) throws(AdminError) -> Int32 {
        let socket = try connect(place: place)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(place)\r\n" + headers + "Connection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else {
                let reason = String(cString: strerror(errno))
                close(socket)
                throw AdminError(description: "\(place): sending failed: \(reason)")
            }
            sent += count
        }
        return socket
    }

    private func exchange(method: String, path: String, body: [UInt8]? = nil) throws(AdminError) -> Answer {
        let headers = "Content-Length: \(body?.count ?? 0)\r\n" + (body == nil ? "" : "Content-Type: application/json\r\n")
        let socket = try open(method, path, headers: headers, body: body ?? [])
        defer { close(socket) }
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

    /// Reads the server-sent events of `GET path` as they come and hands each (its `event:`
    /// name and `data:`) to `onEvent`, until the server ends the stream or `onEvent` answers
    /// false. An answer other than 200 is an error with the server's message.
    public func events(_ path: String, onEvent: (_ event: String, _ data: String) -> Bool) throws(AdminError) {
        let socket = try open("GET", path, headers: "Accept: text/event-stream\r\n")
        defer { close(socket) }
        var raw: [UInt8] = []
        var body = SSEBody()
        var headRead = false
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let received = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if received == 0 { return }
            guard received > 0 else {
                throw AdminError(description: "\(place): the stream stalled for \(timeout) (\(String(cString: strerror(errno))))")
            }
            raw += buffer.prefix(received)
            guard raw.count <= Self.maximumAnswerBytes else {
                throw AdminError(description: "\(place): an event is over \(Self.maximumAnswerBytes) bytes")
            }
            if !headRead {
                guard let end = SSEBody.find([13, 10, 13, 10], in: raw) else { continue }
                let headText = String(decoding: raw[..<end], as: UTF8.self)
                let status = headText.split(separator: " ").dropFirst().first.flatMap { Int($0) }
                guard status == 200 else {
                    // Not a stream: read the rest, which is the error.
                    while raw.count < 65536 {
                        let more = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                        if more <= 0 { break }
                        raw += buffer.prefix(more)
                    }
                    let answer = try Self.parse(raw, from: place)
                    let message = (try? JSONValue(parsing: answer.body))?["error"]?.stringValue
                    throw AdminError(description: message ?? "\(place) answered \(answer.status)")
                }
                body.chunked = headText.lowercased().contains("transfer-encoding: chunked")
                raw.removeFirst(end + 4)
                headRead = true
            }
            let ended = body.take(&raw)
            while let event = body.nextEvent() {
                if !onEvent(event.name, event.data) { return }
            }
            if ended { return }
        }
    }

    /// The status and body of a whole `Connection: close` answer    /// The status and body of a whole `Connection: close` answer (Content-Length or to the end).
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

/// The body of an event stream as it arrives: chunk framing removed (when chunked), then
/// split into events at blank lines.
struct SSEBody {
    var chunked = false
    /// Body bytes not yet split into events.
    private var text: [UInt8] = []

    /// Moves what `raw` holds of the body into `text`; true when the last chunk came.
    mutating func take(_ raw: inout [UInt8]) -> Bool {
        guard chunked else {
            text += raw
            raw.removeAll()
            return false
        }
        while let lineEnd = Self.find([13, 10], in: raw) {
            let sizeText = String(decoding: raw[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return true }
            if size == 0 { return true }
            guard raw.count >= lineEnd + 2 + size + 2 else { return false }
            text += raw[(lineEnd + 2)..<(lineEnd + 2 + size)]
            raw.removeFirst(lineEnd + 2 + size + 2)
        }
        return false
    }

    /// The next whole event: its name (`message` unless `event:` says) and its data lines.
    mutating func nextEvent() -> (name: String, data: String)? {
        while let end = Self.find([10, 10], in: text) {
            let block = String(decoding: text[..<end], as: UTF8.self)
            text.removeFirst(end + 2)
            var name = "message"
            var data: [Substring] = []
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data.append(line.dropFirst(6)) }
            }
            if !data.isEmpty { return (name, data.joined(separator: "\n")) }
        }
        return nil
    }

    static func find(_ pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        return (0...(bytes.count - pattern.count)).first { index in
            pattern.indices.allSatisfy { bytes[index + $0] == pattern[$0] }
        }
    }
}
