public import SwitchyardCore

/// A part of an envelope that a condition or template can read.
///
/// Paths are written with dots: `subject`, `body.sensor.temp`, `body.items.0`,
/// `headers.mqtt.qos` (everything after `headers.` is the header name, dots included).
public enum EnvelopeField: Sendable, Hashable, CustomStringConvertible {
    case id
    case type
    case source
    case subject
    /// RFC 3339 text.
    case time
    case contentType
    /// The trace as an array of instance names.
    case trace
    /// All headers (an object), or one header by name.
    case headers(String?)
    /// The decoded body, or a path inside it.
    case body([String])
    /// The session object, or a path inside it.
    case session([String])

    /// The top-level names a path may start with.
    public static let roots = ["id", "type", "source", "subject", "time", "contentType", "trace", "headers", "body", "session"]

    /// Parses a dotted path; `nil` when it does not start with one of ``roots``.
    public init?(path: String) {
        let components = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let root = components.first, !components.contains(where: \.isEmpty) else { return nil }
        self.init(components: root, Array(components.dropFirst()))
    }

    /// Builds a field from its root name and the components after it.
    public init?(components root: String, _ rest: [String]) {
        switch root {
        case "id" where rest.isEmpty: self = .id
        case "type" where rest.isEmpty: self = .type
        case "source" where rest.isEmpty: self = .source
        case "subject" where rest.isEmpty: self = .subject
        case "time" where rest.isEmpty: self = .time
        case "contentType" where rest.isEmpty: self = .contentType
        case "trace" where rest.isEmpty: self = .trace
        case "headers": self = .headers(rest.isEmpty ? nil : rest.joined(separator: "."))
        case "body": self = .body(rest)
        case "session": self = .session(rest)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .id: "id"
        case .type: "type"
        case .source: "source"
        case .subject: "subject"
        case .time: "time"
        case .contentType: "contentType"
        case .trace: "trace"
        case .headers(let name): name.map { "headers.\($0)" } ?? "headers"
        case .body(let path): (["body"] + path).joined(separator: ".")
        case .session(let path): (["session"] + path).joined(separator: ".")
        }
    }
}

/// One envelope as conditions and templates see it. The body is decoded at most once, on
/// first use, so routes that never look inside never pay for parsing.
public struct EnvelopeScope: Sendable {
    /// The envelope.
    public let envelope: Envelope
    private var decoded: JSONValue?

    /// Wraps an envelope.
    public init(_ envelope: Envelope) { self.envelope = envelope }

    /// The decoded body (decoded on first call).
    public mutating func body() -> JSONValue {
        if let decoded { return decoded }
        let value = envelope.decodedBody()
        decoded = value
        return value
    }

    /// The value of `field`, or `nil` when it is absent (a missing header or body member).
    public mutating func value(of field: EnvelopeField) -> JSONValue? {
        switch field {
        case .id: .string(envelope.id)
        case .type: .string(envelope.type)
        case .source: .string(envelope.source)
        case .subject: .string(envelope.subject)
        case .time: .string(envelope.timeText)
        case .contentType: .string(envelope.contentType)
        case .trace: .array(envelope.trace.map { .string($0) })
        case .headers(nil): .object(envelope.headers.dictionary.mapValues { .string($0) })
        case .headers(let name?): envelope.headers[name].map { .string($0) }
        case .body(let path): body().value(at: path)
        case .session(let path):
            envelope.session.isEmpty ? nil : (try? JSONValue(parsing: envelope.session))?.value(at: path)
        }
    }
}
