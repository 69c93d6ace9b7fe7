/// The one typed message that flows between ports.
///
/// The body is kept as bytes; a route that needs to look inside decodes it once per dispatch
/// (see ``Envelope/decodedBody()``), so envelopes that only pass through are never parsed.
public struct Envelope: Sendable, Equatable {
    /// Unique id, a ULID unless the emitting plugin gave its own.
    public var id: String
    /// Schema name, e.g. `mqtt.Message`.
    public var type: String
    /// The `instance.port` that emitted it.
    public var source: String
    /// Topic, SIP URI, characteristic…
    public var subject: String
    /// Creation time, nanoseconds since the Unix epoch.
    public var time: Int64
    /// Protocol metadata such as `mqtt.qos`.
    public var headers: Headers
    /// MIME type of ``body``.
    public var contentType: String
    /// The payload.
    public var body: [UInt8]
    /// Instance names the envelope passed through, oldest first: the loop guard.
    public var trace: [String]
    /// Optional JSON object attached to everything sent for one conversation.
    public var session: [UInt8]

    /// Creates an envelope; `id` and `time` default to a fresh ULID and now.
    public init(
        id: String = ULID.next(),
        type: String,
        source: String = "",
        subject: String = "",
        time: Int64 = Clock.nowUnixNanos(),
        headers: Headers = Headers(),
        contentType: String = "application/json",
        body: [UInt8] = [],
        trace: [String] = [],
        session: [UInt8] = []
    ) {
        self.id = id
        self.type = type
        self.source = source
        self.subject = subject
        self.time = time
        self.headers = headers
        self.contentType = contentType
        self.body = body
        self.trace = trace
        self.session = session
    }

    /// The body as text (lossy for invalid UTF-8).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// Decodes the body: JSON for JSON content types (a body that is not valid JSON becomes
    /// its text), the text as a JSON string for `text/*`, and for any other content type JSON
    /// when it parses, else text.
    public func decodedBody() -> JSONValue {
        if body.isEmpty { return .null }
        if contentType.hasPrefix("text/") { return .string(bodyText) }
        if let value = try? JSONValue(parsing: body) { return value }
        return .string(bodyText)
    }

    /// The instance name part of ``source``.
    public var sourceInstance: Substring {
        source.split(separator: ".", maxSplits: 1).first ?? Substring(source)
    }

    /// The time as RFC 3339 text in UTC with millisecond precision.
    public var timeText: String { Clock.rfc3339(unixNanos: time) }

    /// The whole envelope as one JSON object (what the `file` sink writes per line). A JSON
    /// body is embedded as JSON, any other body as a string.
    public func jsonObject() -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(id),
            "type": .string(type),
            "source": .string(source),
            "subject": .string(subject),
            "time": .string(timeText),
            "contentType": .string(contentType),
            "headers": .object(headers.dictionary.mapValues { .string($0) }),
            "body": decodedBody(),
            "trace": .array(trace.map { .string($0) }),
        ]
        if !session.isEmpty, let session = try? JSONValue(parsing: session) { object["session"] = session }
        return .object(object)
    }
}

/// Ordered protocol headers; names are case-sensitive and may repeat.
public struct Headers: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// The headers in order.
    public private(set) var fields: [(name: String, value: String)]

    /// Creates headers from name/value pairs, in order.
    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name`.
    public subscript(name: String) -> String? {
        get { fields.first(where: { $0.name == name })?.value }
        set {
            fields.removeAll(where: { $0.name == name })
            if let newValue { fields.append((name: name, value: newValue)) }
        }
    }

    /// Adds a header after the existing ones.
    public mutating func append(name: String, value: String) { fields.append((name: name, value: value)) }

    /// The number of headers.
    public var count: Int { fields.count }

    /// The headers as a dictionary (the last of repeated names wins).
    public var dictionary: [String: String] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: Headers, rhs: Headers) -> Bool {
        lhs.fields.elementsEqual(rhs.fields, by: { $0.name == $1.name && $0.value == $1.value })
    }
}
