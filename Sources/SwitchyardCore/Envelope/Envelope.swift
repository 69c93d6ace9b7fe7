/// The one typed message that flows between ports.
///
/// The body is kept as bytes; a route that needs to look inside decodes it once per dispatch
/// (see ``Envelope/decodedBody()``), so envelopes that only pass through are never parsed.
public struct Envelope: Sendable, Equatable {
    // The fields live in one copy-on-write box: an envelope is copied several times on its
    // way through a route (into the queue, out of it, to the sink's C view), and copying one
    // reference costs one retain where copying ten fields cost one per string and array.
    // Reads borrow the field (`_read`: no retain); writes copy the box first if it is shared.
    private var storage: Storage

    /// Unique id, a ULID unless the emitting plugin gave its own.
    public var id: String {
        _read { yield storage.id }
        set { uniqueStorage().id = newValue }
        _modify { yield &uniqueStorage().id }
    }
    /// Schema name, e.g. `mqtt.Message`.
    public var type: String {
        _read { yield storage.type }
        set { uniqueStorage().type = newValue }
        _modify { yield &uniqueStorage().type }
    }
    /// The `instance.port` that emitted it.
    public var source: String {
        _read { yield storage.source }
        set { uniqueStorage().source = newValue }
        _modify { yield &uniqueStorage().source }
    }
    /// Topic, SIP URI, characteristic…
    public var subject: String {
        _read { yield storage.subject }
        set { uniqueStorage().subject = newValue }
        _modify { yield &uniqueStorage().subject }
    }
    /// Creation time, nanoseconds since the Unix epoch.
    public var time: Int64 {
        _read { yield storage.time }
        set { uniqueStorage().time = newValue }
        _modify { yield &uniqueStorage().time }
    }
    /// Protocol metadata such as `mqtt.qos`.
    public var headers: Headers {
        _read { yield storage.headers }
        set { uniqueStorage().headers = newValue }
        _modify { yield &uniqueStorage().headers }
    }
    /// MIME type of ``body``.
    public var contentType: String {
        _read { yield storage.contentType }
        set { uniqueStorage().contentType = newValue }
        _modify { yield &uniqueStorage().contentType }
    }
    /// The payload.
    public var body: [UInt8] {
        _read { yield storage.body }
        set { uniqueStorage().body = newValue }
        _modify { yield &uniqueStorage().body }
    }
    /// Instance names the envelope passed through, oldest first: the loop guard.
    public var trace: [String] {
        _read { yield storage.trace }
        set { uniqueStorage().trace = newValue }
        _modify { yield &uniqueStorage().trace }
    }
    /// Optional JSON object attached to everything sent for one conversation.
    public var session: [UInt8] {
        _read { yield storage.session }
        set { uniqueStorage().session = newValue }
        _modify { yield &uniqueStorage().session }
    }

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
        storage = Storage(
            id: id, type: type, source: source, subject: subject, time: time, headers: headers, contentType: contentType,
            body: body, trace: trace, session: session)
    }

    /// The box, copied first if another envelope shares it.
    @inline(__always)
    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    public static func == (lhs: Envelope, rhs: Envelope) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fieldsEqual(rhs.storage)
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

extension Envelope {
    /// An envelope's fields. `@unchecked Sendable`: a box is mutated only through
    /// `uniqueStorage()`, that is while one envelope alone holds it; a box two envelopes (or
    /// two threads) share is only read. Exclusivity is unchecked for the same reason, and
    /// because a dynamic check on every field access would cost what the box saves.
    fileprivate final class Storage: @unchecked Sendable {
        @exclusivity(unchecked) var id: String
        @exclusivity(unchecked) var type: String
        @exclusivity(unchecked) var source: String
        @exclusivity(unchecked) var subject: String
        @exclusivity(unchecked) var time: Int64
        @exclusivity(unchecked) var headers: Headers
        @exclusivity(unchecked) var contentType: String
        @exclusivity(unchecked) var body: [UInt8]
        @exclusivity(unchecked) var trace: [String]
        @exclusivity(unchecked) var session: [UInt8]

        init(
            id: String, type: String, source: String, subject: String, time: Int64, headers: Headers, contentType: String,
            body: [UInt8], trace: [String], session: [UInt8]
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

        func copy() -> Storage {
            Storage(
                id: id, type: type, source: source, subject: subject, time: time, headers: headers, contentType: contentType,
                body: body, trace: trace, session: session)
        }

        func fieldsEqual(_ other: Storage) -> Bool {
            id == other.id && type == other.type && source == other.source && subject == other.subject && time == other.time
                && headers == other.headers && contentType == other.contentType && body == other.body && trace == other.trace
                && session == other.session
        }
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
