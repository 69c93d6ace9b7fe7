/// The one typed message that flows between ports.
///
/// The body is kept as bytes; a route that needs to look inside decodes it once per dispatch
/// (see ``Envelope/decodedBody()``), so envelopes that only pass through are never parsed.
public struct Envelope: Sendable, Equatable {
    // The fields live in one copy-on-write box: an envelope is copied several times on its
    // way through a route (into the queue, out of it, to the sink's C view), and copying one
    // reference costs one retain where copying ten fields cost one per string and array.
    // Reads borrow the field (`_read`: no retain); writes (`_modify`) copy the box first if
    // it is shared.
    //
    // The accessors are inlinable: called from another module, a `_modify` that is not
    // inlined is a coroutine whose frame the runtime allocates on the heap (240 bytes), once
    // per write — four allocations per emitted envelope before this was so.
    @usableFromInline internal var storage: Storage

    /// Unique id, a ULID unless the emitting plugin gave its own.
    public var id: String {
        @inlinable _read { yield storage.fields.id }
        @inlinable _modify { yield &uniqueStorage().fields.id }
    }
    /// Schema name, e.g. `mqtt.Message`.
    public var type: String {
        @inlinable _read { yield storage.fields.type }
        @inlinable _modify { yield &uniqueStorage().fields.type }
    }
    /// The `instance.port` that emitted it.
    public var source: String {
        @inlinable _read { yield storage.fields.source }
        @inlinable _modify { yield &uniqueStorage().fields.source }
    }
    /// Topic, SIP URI, characteristic…
    public var subject: String {
        @inlinable _read { yield storage.fields.subject }
        @inlinable _modify { yield &uniqueStorage().fields.subject }
    }
    /// Creation time, nanoseconds since the Unix epoch.
    public var time: Int64 {
        @inlinable _read { yield storage.fields.time }
        @inlinable _modify { yield &uniqueStorage().fields.time }
    }
    /// Protocol metadata such as `mqtt.qos`.
    public var headers: Headers {
        @inlinable _read { yield storage.fields.headers }
        @inlinable _modify { yield &uniqueStorage().fields.headers }
    }
    /// MIME type of ``body``.
    public var contentType: String {
        @inlinable _read { yield storage.fields.contentType }
        @inlinable _modify { yield &uniqueStorage().fields.contentType }
    }
    /// The payload.
    public var body: [UInt8] {
        @inlinable _read { yield storage.fields.body }
        @inlinable _modify { yield &uniqueStorage().fields.body }
    }
    /// Instance names the envelope passed through, oldest first: the loop guard.
    public var trace: [String] {
        @inlinable _read { yield storage.fields.trace }
        @inlinable _modify { yield &uniqueStorage().fields.trace }
    }
    /// Optional JSON object attached to everything sent for one conversation.
    public var session: [UInt8] {
        @inlinable _read { yield storage.fields.session }
        @inlinable _modify { yield &uniqueStorage().fields.session }
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
            Fields(
                id: id, type: type, source: source, subject: subject, time: time, headers: headers, contentType: contentType,
                body: body, trace: trace, session: session))
    }

    /// The box, copied first if another envelope shares it.
    @inlinable @inline(__always)
    internal mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { copyStorage() }
        return storage
    }

    /// Gives this envelope a box of its own. Out of line: the copy is the rare path, and
    /// inlined into every accessor it would only add code.
    @usableFromInline @inline(never)
    internal mutating func copyStorage() { storage = Storage(storage.fields) }

    public static func == (lhs: Envelope, rhs: Envelope) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
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
    /// An envelope's fields, as one value the box holds.
    @usableFromInline
    internal struct Fields: Equatable {
        @usableFromInline var id: String
        @usableFromInline var type: String
        @usableFromInline var source: String
        @usableFromInline var subject: String
        @usableFromInline var time: Int64
        @usableFromInline var headers: Headers
        @usableFromInline var contentType: String
        @usableFromInline var body: [UInt8]
        @usableFromInline var trace: [String]
        @usableFromInline var session: [UInt8]
    }

    /// The box. `@unchecked Sendable`: it is mutated only through `uniqueStorage()`, that is
    /// while one envelope alone holds it; a box two envelopes (or two threads) share is only
    /// read. Exclusivity is unchecked for the same reason, and because a dynamic check on every
    /// field access would cost what the box saves.
    @usableFromInline
    internal final class Storage: @unchecked Sendable {
        @usableFromInline @exclusivity(unchecked) var fields: Fields

        @usableFromInline
        init(_ fields: Fields) { self.fields = fields }
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
