/// Why bytes are not a SIP message. `line` (1-based) points into the message when it can.
public struct SIPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure.
    public enum Kind: Sendable, Equatable {
        /// Not SIP, or SIP that breaks the grammar: answer 400 if it was a request.
        case malformed
        /// Over a configured limit: answer 513 (Message Too Large) if it was a request.
        case tooLarge
    }

    /// What kind of failure.
    public var kind: Kind
    /// What is wrong.
    public var reason: String
    /// The line it is on, when known.
    public var line: Int?

    /// Creates an error.
    public init(_ kind: Kind, _ reason: String, line: Int? = nil) {
        self.kind = kind
        self.reason = reason
        self.line = line
    }

    public var description: String { line.map { "line \($0): \(reason)" } ?? reason }
}

/// Size limits a parser enforces before it allocates for what a peer claims.
public struct SIPLimits: Sendable {
    /// Start line and header fields together.
    public var headerBytes: Int
    /// Header fields (lines after unfolding).
    public var headerCount: Int
    /// The body.
    public var bodyBytes: Int
    /// A whole message: a datagram, or a framed message on a stream (start line to body end).
    public var messageBytes: Int

    /// Creates limits; the defaults suit pager-mode messaging (a message is at most its
    /// default header and body limits together).
    public init(headerBytes: Int = 16384, headerCount: Int = 128, bodyBytes: Int = 65536, messageBytes: Int = 81920) {
        self.headerBytes = headerBytes
        self.headerCount = headerCount
        self.bodyBytes = bodyBytes
        self.messageBytes = messageBytes
    }
}

/// Parses SIP messages (RFC 3261 §7, §18.3): whole datagrams, or a byte stream framed by
/// `Content-Length` (``SIPStreamDecoder``).
public enum SIPParser {
    /// The headers every request and response must carry (§8.1.1; Max-Forwards is added by
    /// proxies and not required here).
    static let mandatory = ["Via", "From", "To", "Call-ID", "CSeq"]

    /// Parses one datagram. `Content-Length`, when present, must not exceed what follows the
    /// headers (extra bytes are ignored, §18.3); without it the rest of the datagram is the body.
    public static func parse(datagram bytes: [UInt8], limits: SIPLimits = SIPLimits()) throws(SIPParseError) -> SIPMessage {
        guard bytes.count <= limits.messageBytes else {
            throw SIPParseError(.tooLarge, "a datagram of \(bytes.count) bytes or more, limit \(limits.messageBytes)")
        }
        guard let end = headerEnd(in: bytes[...], limit: limits.headerBytes) else {
            throw SIPParseError(bytes.count > limits.headerBytes ? .tooLarge : .malformed, "no blank line after the headers")
        }
        var message = try parseHead(bytes[..<end.headerEnd], limits: limits)
        let rest = bytes[end.bodyStart...]
        if let length = try contentLength(message.headers) {
            guard length <= rest.count else {
                throw SIPParseError(.malformed, "Content-Length \(length) but only \(rest.count) body bytes in the datagram")
            }
            guard length <= limits.bodyBytes else { throw SIPParseError(.tooLarge, "body of \(length) bytes, limit \(limits.bodyBytes)") }
            message.body = Array(rest.prefix(length))
        } else {
            guard rest.count <= limits.bodyBytes else {
                throw SIPParseError(.tooLarge, "body of \(rest.count) bytes, limit \(limits.bodyBytes)")
            }
            message.body = Array(rest)
        }
        return message
    }

    /// What a server needs to answer a request it could not parse with 400 or 513: the
    /// request line and the Via, From, To, Call-ID and CSeq fields, read leniently (§21.4.1).
    /// Nil when even those are missing, or the bytes are a response.
    public static func salvageRequest(_ bytes: [UInt8]) -> SIPMessage? {
        let head = bytes.prefix(16384)
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).lazy.map {
            String(decoding: $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0, as: UTF8.self)
        }.makeIterator()
        guard let first = lines.next(), let startLine = try? parseStartLine(first, line: 1), case .request = startLine else { return nil }
        var headers = SIPHeaders()
        while let line = lines.next(), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = SIPHeaders.canonicalName(line[..<colon].trimmingWhitespaceSubstring())
            guard mandatory.contains(name) else { continue }
            headers.append(name, line[line.index(after: colon)...].trimmingWhitespaceSubstring())
        }
        guard mandatory.allSatisfy({ headers[$0] != nil }) else { return nil }
        return SIPMessage(startLine: startLine, headers: headers)
    }

    /// Where the header section ends: the index of its final CRLF (or LF) pair, and where the
    /// body starts. Nil when there is no blank line within `limit` bytes.
    static func headerEnd(in bytes: ArraySlice<UInt8>, limit: Int) -> (headerEnd: Int, bodyStart: Int)? {
        var index = bytes.startIndex
        let stop = min(bytes.endIndex, bytes.startIndex + limit + 4)
        while index < stop {
            if bytes[index] == UInt8(ascii: "\n") {
                let next = index + 1
                if next < bytes.endIndex, bytes[next] == UInt8(ascii: "\n") { return (index, next + 1) }
                if next + 1 < bytes.endIndex, bytes[next] == UInt8(ascii: "\r"), bytes[next + 1] == UInt8(ascii: "\n") {
                    return (index, next + 2)
                }
            }
            index += 1
        }
        return nil
    }

    /// The declared body length; nil when absent.
    static func contentLength(_ headers: SIPHeaders) throws(SIPParseError) -> Int? {
        let values = headers.fields.filter { $0.name == "Content-Length" }.map { $0.value }
        guard let first = values.first else { return nil }
        guard values.allSatisfy({ $0 == first }), let length = Int(first), length >= 0 else {
            throw SIPParseError(.malformed, "Content-Length \(values.joined(separator: ", ")) is not one non-negative number")
        }
        return length
    }

    /// Parses the start line and the header fields (`bytes` ends before the blank line).
    static func parseHead(_ bytes: ArraySlice<UInt8>, limits: SIPLimits) throws(SIPParseError) -> SIPMessage {
        guard bytes.count <= limits.headerBytes else {
            throw SIPParseError(.tooLarge, "headers of \(bytes.count) bytes, limit \(limits.headerBytes)")
        }
        var lines: [(text: String, number: Int)] = []
        var lineNumber = 0
        for raw in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = raw
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard let text = String(validating: line, as: UTF8.self) else {
                throw SIPParseError(.malformed, "not UTF-8", line: lineNumber)
            }
            if let first = text.utf8.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t"), lineNumber > 2, !lines.isEmpty {
                // Folding (LWS): the line continues the previous header field.
                lines[lines.count - 1].text += " " + text.trimmingWhitespace()
            } else {
                lines.append((text, lineNumber))
            }
        }
        // Empty lines before the start line are tolerated (§7.5).
        while let first = lines.first, first.text.isEmpty { lines.removeFirst() }
        guard let start = lines.first else { throw SIPParseError(.malformed, "empty message") }
        let startLine = try parseStartLine(start.text, line: start.number)
        guard lines.count - 1 <= limits.headerCount else {
            throw SIPParseError(.tooLarge, "\(lines.count - 1) header fields, limit \(limits.headerCount)")
        }
        var headers = SIPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.text.firstIndex(of: ":") else {
                throw SIPParseError(.malformed, "header field without a colon: \(line.text.prefix(40))", line: line.number)
            }
            let name = line.text[..<colon].trimmingWhitespaceSubstring()
            guard isToken(name) else {
                throw SIPParseError(.malformed, "bad header name '\(name.prefix(40))'", line: line.number)
            }
            let value = line.text[line.text.index(after: colon)...].trimmingWhitespaceSubstring()
            // A lone CR or a NUL would end the line for some other parser when the value is
            // copied into a response or an envelope header: refused, never passed on.
            guard !value.utf8.contains(where: { $0 == UInt8(ascii: "\r") || $0 == 0 }) else {
                throw SIPParseError(.malformed, "header field \(name.prefix(40)) holds a CR or NUL", line: line.number)
            }
            headers.append(String(name), value)
        }
        for name in mandatory where headers[name] == nil {
            throw SIPParseError(.malformed, "missing \(name) header")
        }
        guard let cseq = headers.cseq else {
            throw SIPParseError(.malformed, "CSeq '\(headers["CSeq"]?.prefix(40) ?? "")' is not 'number METHOD'")
        }
        guard cseq.number <= SIPHeaders.maximumCSeq else {
            throw SIPParseError(.malformed, "CSeq \(cseq.number) is not below 2^31 (RFC 3261 §8.1.1.5)")
        }
        if case .request(let method, _) = startLine, cseq.method != method {
            throw SIPParseError(.malformed, "CSeq method \(cseq.method) differs from the request method \(method)")
        }
        return SIPMessage(startLine: startLine, headers: headers)
    }

    static func parseStartLine(_ text: String, line: Int) throws(SIPParseError) -> SIPMessage.StartLine {
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw SIPParseError(.malformed, "start line '\(text.prefix(60))' has not three parts", line: line) }
        guard !text.utf8.contains(where: { $0 == UInt8(ascii: "\r") || $0 == 0 }) else {
            throw SIPParseError(.malformed, "the start line holds a CR or NUL", line: line)
        }
        if parts[0].uppercased() == "SIP/2.0" {
            guard parts[1].count == 3, let status = Int(parts[1]), (100...699).contains(status) else {
                throw SIPParseError(.malformed, "status code '\(parts[1].prefix(10))' is not 100-699", line: line)
            }
            return .response(status: status, reason: String(parts[2]))
        }
        guard parts[2].uppercased() == "SIP/2.0" else {
            throw SIPParseError(.malformed, "version '\(parts[2].prefix(20))' is not SIP/2.0", line: line)
        }
        guard isToken(parts[0]) else {
            throw SIPParseError(.malformed, "method '\(parts[0].prefix(20))' is not a token", line: line)
        }
        guard !parts[1].isEmpty, parts[1].contains(":") else {
            throw SIPParseError(.malformed, "Request-URI '\(parts[1].prefix(60))' is not a URI", line: line)
        }
        return .request(method: String(parts[0]), uri: String(parts[1]))
    }

    /// Whether `text` is an RFC 3261 `token` (a header field name, a method): one or more ASCII
    /// letters, digits or `-.!%*_+`'~`. Letters outside ASCII are not token characters.
    public static func isToken(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    /// RFC 3261 `token` characters.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "!"), UInt8(ascii: "%"), UInt8(ascii: "*"), UInt8(ascii: "_"),
            UInt8(ascii: "+"), UInt8(ascii: "`"), UInt8(ascii: "'"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}

/// Frames SIP messages on a stream transport (TCP, TLS) by `Content-Length`, which is
/// mandatory there (§18.3). Keep-alive CRLFs between messages are skipped.
///
/// Linear in the bytes received however they are cut: the search for the end of the headers
/// resumes where it stopped, a head is parsed once, and consumed bytes are dropped in bulk —
/// a peer sending one byte at a time costs O(n), not O(n²).
public struct SIPStreamDecoder: Sendable {
    private var buffer: [UInt8] = []
    /// Where the next message starts in `buffer`; the bytes before it are consumed.
    private var start = 0
    /// Where the search for the end of the headers goes on: the bytes from `start` to here hold none.
    private var searched = 0
    /// The message whose head is parsed, waiting for `length` body bytes from `bodyStart`.
    private var head: (message: SIPMessage, bodyStart: Int, length: Int)?
    private let limits: SIPLimits

    /// A decoder with `limits`.
    public init(limits: SIPLimits = SIPLimits()) { self.limits = limits }

    /// Adds bytes read from the stream.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        // Consumed bytes go once they are at least half the buffer: each byte moves O(1) times.
        if start > 0, start * 2 >= buffer.count {
            buffer.removeSubrange(0..<start)
            searched -= start
            head?.bodyStart -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Whether bytes of a message that is not complete yet are held (keep-alive line breaks
    /// between messages do not count). Meaningful after ``next()`` returned nil.
    public var holdsPartialMessage: Bool {
        head != nil || buffer[start...].contains { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
    }

    /// The next complete message, nil when more bytes are needed. After an error the stream
    /// cannot be resynchronised: close the connection.
    public mutating func next() throws(SIPParseError) -> SIPMessage? {
        if head == nil {
            while start < buffer.count, buffer[start] == UInt8(ascii: "\r") || buffer[start] == UInt8(ascii: "\n") { start += 1 }
            searched = max(searched, start)
            guard start < buffer.count else { return nil }
            guard let end = try findHeaderEnd() else { return nil }
            var message = try SIPParser.parseHead(buffer[start..<end.headerEnd], limits: limits)
            guard let length = try SIPParser.contentLength(message.headers) else {
                throw SIPParseError(.malformed, "no Content-Length on a stream transport")
            }
            guard length <= limits.bodyBytes else { throw SIPParseError(.tooLarge, "body of \(length) bytes, limit \(limits.bodyBytes)") }
            guard end.bodyStart - start <= limits.messageBytes - length else {
                throw SIPParseError(.tooLarge, "a message of \(end.bodyStart - start + length) bytes, limit \(limits.messageBytes)")
            }
            message.body = []
            head = (message, end.bodyStart, length)
        }
        guard let (parsed, bodyStart, length) = head, buffer.count - bodyStart >= length else { return nil }
        var message = parsed
        message.body = Array(buffer[bodyStart..<(bodyStart + length)])
        head = nil
        start = bodyStart + length
        searched = start
        return message
    }

    /// The end of the head that starts at `start`: the search goes on from `searched`, and
    /// stops where the bytes do not yet tell whether a line break ends the head.
    private mutating func findHeaderEnd() throws(SIPParseError) -> (headerEnd: Int, bodyStart: Int)? {
        let newline = UInt8(ascii: "\n")
        let stop = min(buffer.count, start + limits.headerBytes + 4)
        var index = searched
        while index < stop {
            if buffer[index] == newline {
                guard index + 1 < buffer.count else { break }
                if buffer[index + 1] == newline { return (index, index + 2) }
                if buffer[index + 1] == UInt8(ascii: "\r") {
                    guard index + 2 < buffer.count else { break }
                    if buffer[index + 2] == newline { return (index, index + 3) }
                }
            }
            index += 1
        }
        searched = index
        if index >= start + limits.headerBytes + 4 {
            throw SIPParseError(.tooLarge, "no end of headers within \(limits.headerBytes) bytes")
        }
        return nil
    }
}

extension Substring {
    func trimmingWhitespaceSubstring() -> String { String(self).trimmingWhitespace() }
}
