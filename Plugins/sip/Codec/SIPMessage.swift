/// A SIP request or response (RFC 3261 §7): a start line, ordered header fields, a body.
public struct SIPMessage: Sendable, Equatable {
    /// The first line.
    public enum StartLine: Sendable, Equatable {
        /// `METHOD Request-URI SIP/2.0`.
        case request(method: String, uri: String)
        /// `SIP/2.0 Status-Code Reason-Phrase`.
        case response(status: Int, reason: String)
    }

    /// The first line.
    public var startLine: StartLine
    /// The header fields, in order, with full (not compact) names.
    public var headers: SIPHeaders
    /// The body (`Content-Length` bytes).
    public var body: [UInt8]

    /// Creates a message.
    public init(startLine: StartLine, headers: SIPHeaders = SIPHeaders(), body: [UInt8] = []) {
        self.startLine = startLine
        self.headers = headers
        self.body = body
    }

    /// The method of a request, or of the request a response answers (from CSeq).
    public var method: String? {
        switch startLine {
        case .request(let method, _): method
        case .response: headers.cseq?.method
        }
    }

    /// The status code of a response.
    public var status: Int? {
        if case .response(let status, _) = startLine { return status }
        return nil
    }

    /// The message as bytes: start line, headers, `Content-Length` (always written, set to the
    /// body's size), a blank line and the body.
    public func serialized() -> [UInt8] {
        var text: String
        switch startLine {
        case .request(let method, let uri): text = "\(method) \(uri) SIP/2.0\r\n"
        case .response(let status, let reason): text = "SIP/2.0 \(status) \(reason)\r\n"
        }
        for field in headers.fields where field.name.lowercased() != "content-length" {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Content-Length: \(body.count)\r\n\r\n"
        return Array(text.utf8) + body
    }
}

/// Ordered SIP header fields. Names compare case-insensitively; compact forms (`v`, `f`, `i`…)
/// are stored under their full names.
public struct SIPHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// The fields as received or added, one per header line (or per `append`).
    public private(set) var fields: [(name: String, value: String)]

    /// Creates headers from fields in order.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields.map { (SIPHeaders.canonicalName($0.name), $0.value) }
    }

    /// Creates headers from a literal (order as written).
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { (name: $0.0, value: $0.1) })
    }

    /// Adds a field at the end.
    public mutating func append(_ name: String, _ value: String) {
        fields.append((Self.canonicalName(name), value))
    }

    /// Adds a field at the front (a Via, a Record-Route).
    public mutating func prepend(_ name: String, _ value: String) {
        fields.insert((Self.canonicalName(name), value), at: 0)
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        let key = name.lowercased()
        fields.removeAll { $0.name.lowercased() == key }
    }

    /// Replaces every field named `name` with one of `value`.
    public mutating func set(_ name: String, _ value: String) {
        let key = Self.canonicalName(name).lowercased()
        if let index = fields.firstIndex(where: { $0.name.lowercased() == key }) {
            fields[index].value = value
            var seen = false
            fields.removeAll { field in
                guard field.name.lowercased() == key else { return false }
                defer { seen = true }
                return seen
            }
        } else {
            append(name, value)
        }
    }

    /// The first field named `name`.
    public subscript(name: String) -> String? {
        let key = Self.canonicalName(name).lowercased()
        return fields.first { $0.name.lowercased() == key }?.value
    }

    /// Every value of `name`: the fields' values, each split at the commas that separate
    /// values (RFC 3261 §7.3.1) — not inside quotes or `<…>`. Authorization-type headers, whose
    /// parameters are comma-separated, are never split.
    public func values(_ name: String) -> [String] {
        let key = Self.canonicalName(name).lowercased()
        let matching = fields.filter { $0.name.lowercased() == key }.map(\.value)
        guard !Self.unsplittable.contains(key) else { return matching }
        return matching.flatMap(Self.splitValues)
    }

    /// The largest CSeq number (RFC 3261 §8.1.1.5: less than 2³¹). The parser refuses a larger
    /// one, so one more than a parsed number never overflows.
    public static let maximumCSeq = UInt32(Int32.max)

    /// The CSeq number and method.
    public var cseq: (number: UInt32, method: String)? {
        guard let value = self["CSeq"] else { return nil }
        let parts = value.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 2, let number = UInt32(parts[0]) else { return nil }
        return (number, String(parts[1]))
    }

    /// Compact forms (RFC 3261 §7.3.3 and later RFCs).
    static let compactForms: [String: String] = [
        "i": "Call-ID", "m": "Contact", "e": "Content-Encoding", "l": "Content-Length", "c": "Content-Type",
        "f": "From", "s": "Subject", "k": "Supported", "t": "To", "v": "Via", "o": "Event", "r": "Refer-To",
        "u": "Allow-Events", "x": "Session-Expires", "b": "Referred-By", "a": "Accept-Contact",
    ]

    /// The usual spelling of common header names, so that output looks like other stacks'.
    static let spellings: [String: String] = Dictionary(
        uniqueKeysWithValues: [
            "Via", "From", "To", "Call-ID", "CSeq", "Contact", "Max-Forwards", "Content-Type", "Content-Length",
            "Content-Encoding", "Route", "Record-Route", "Authorization", "Proxy-Authorization", "WWW-Authenticate",
            "Proxy-Authenticate", "Expires", "User-Agent", "Server", "Allow", "Supported", "Require", "Accept",
            "Subject", "Event", "Refer-To", "Allow-Events", "Session-Expires", "Referred-By", "Accept-Contact",
            "Authentication-Info", "Unsupported", "Min-Expires", "Retry-After", "Date", "Timestamp", "Warning",
        ].map { ($0.lowercased(), $0) })

    static let unsplittable: Set<String> = [
        "authorization", "proxy-authorization", "www-authenticate", "proxy-authenticate", "authentication-info",
        "date", "retry-after", "subject", "user-agent", "server", "warning", "call-id", "cseq", "content-type",
    ]

    /// The full, conventionally spelled name for `name` (compact forms expanded).
    public static func canonicalName(_ name: String) -> String {
        let lower = name.lowercased()
        if let full = compactForms[lower] { return full }
        return spellings[lower] ?? name
    }

    /// The comma-separated values of one header field (`Via`, `Contact`…), commas inside
    /// quotes and angle brackets kept.
    public static func splitValues(_ value: String) -> [String] {
        var values: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        var angle = 0
        for character in value {
            if escaped {
                escaped = false
            } else if quoted {
                if character == "\\" { escaped = true } else if character == "\"" { quoted = false }
            } else if character == "\"" {
                quoted = true
            } else if character == "<" {
                angle += 1
            } else if character == ">" {
                angle = max(0, angle - 1)
            } else if character == ",", angle == 0 {
                values.append(current.trimmingWhitespace())
                current = ""
                continue
            }
            current.append(character)
        }
        values.append(current.trimmingWhitespace())
        return values.filter { !$0.isEmpty }
    }

    public static func == (lhs: SIPHeaders, rhs: SIPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
