public import SwitchyardCore

/// A configuration value that states its own JSON Schema instead of having it derived: the
/// escape hatch for values whose shape is a union (`"host:port"` or `{ host, port }`), a
/// duration written as text or a number, or a checked string like a UUID.
public protocol ConfigurationValue: Decodable {
    /// The schema of the value (`["type": ["string", "integer"]]`).
    static var configurationSchema: JSONValue { get }
    /// Any valid value: what the schema derivation hands to the type holding this one.
    static var schemaPlaceholder: Self { get }
}

/// A setting that takes one of a fixed set of names; the schema lists them as an `enum`.
///
/// ```swift
/// enum Transport: String, ConfigurationEnum { case udp, tcp, tls }
/// ```
public protocol ConfigurationEnum: ConfigurationValue, RawRepresentable, CaseIterable where RawValue == String {}

extension ConfigurationEnum {
    public static var configurationSchema: JSONValue { ["enum": .array(allCases.map { .string($0.rawValue) })] }

    public static var schemaPlaceholder: Self {
        guard let first = allCases.first else { preconditionFailure("\(Self.self) has no cases") }
        return first
    }

    /// Reads the name; an error lists the allowed ones (`'sctp' is not udp, tcp or tls`).
    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(rawValue: name) else {
            let names = Self.allCases.map(\.rawValue)
            let list = names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "") : names.joined()
            throw ConfigurationError(decoder, "'\(name)' is not \(list)")
        }
        self = value
    }
}

/// A duration setting: `500ms`, `10s`, `5m`, or a number of milliseconds.
public struct ConfigurationDuration: ConfigurationValue, Sendable, Hashable, CustomStringConvertible {
    /// The duration.
    public var duration: Duration
    /// How the configuration wrote it (how a default appears in the schema).
    public var text: String

    /// A default given as a `Duration`.
    public init(_ duration: Duration) {
        self.duration = duration
        let (seconds, attoseconds) = duration.components
        text =
            switch (seconds, attoseconds) {
            case (let seconds, 0) where seconds != 0 && seconds % 3600 == 0: "\(seconds / 3600)h"
            case (let seconds, 0) where seconds != 0 && seconds % 60 == 0: "\(seconds / 60)m"
            case (let seconds, 0): "\(seconds)s"
            default: "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000)ms"
            }
    }

    /// The duration in whole nanoseconds (0 for a negative one, which configuration cannot write).
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000)).partialValue
    }

    public init(from decoder: any Decoder) throws {
        let value = try ConfigurationJSON(from: decoder).value
        guard let nanoseconds = DurationText.nanoseconds(value) else {
            throw ConfigurationError(decoder, "'\(value.text)' is not a duration like 500ms, 10s or 5m")
        }
        duration = .nanoseconds(Int64(clamping: nanoseconds))
        text = value.text
    }

    public static var configurationSchema: JSONValue { ["type": ["string", "integer"]] }
    public static var schemaPlaceholder: Self { Self(.seconds(1)) }
    public var description: String { text }
}

/// Any JSON value, taken as written: a section the plugin reads itself (the schema allows
/// anything there unless a description of it is added).
public struct ConfigurationJSON: ConfigurationValue, Sendable, Hashable {
    /// The value.
    public var value: JSONValue

    public init(_ value: JSONValue) { self.value = value }

    public init(from decoder: any Decoder) throws {
        // Deriving a schema: the value is unknown, so a reader that branches on it takes its
        // structured branch and so has it recorded.
        if decoder is SchemaRecorder {
            value = .null
            return
        }
        guard let decoder = decoder as? ConfigurationDecoder else {
            throw ConfigurationError(decoder, "a JSON value can only be read from a plugin configuration")
        }
        guard let value = decoder.value else { throw ConfigurationError(decoder, "is required") }
        self.value = value
    }

    public static var configurationSchema: JSONValue { [:] }
    public static var schemaPlaceholder: Self { Self(.null) }
}

/// A secret setting (a password): a string the schema marks `secret`, so the router redacts it
/// wherever it shows configuration.
public struct ConfigurationSecret: ConfigurationValue, Sendable, Hashable {
    /// The secret.
    public var value: String

    public init(_ value: String) { self.value = value }

    public init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(String.self) }

    public static var configurationSchema: JSONValue { ["type": "string", "secret": true] }
    public static var schemaPlaceholder: Self { Self("") }
}

/// A file or folder path. The schema marks it `format: path`, so the router hands the plugin a
/// relative path already taken from the folder of the route file that sets it.
public struct ConfigurationPath: ConfigurationValue, Sendable, Hashable {
    /// The path (absolute once the router has resolved it).
    public var path: String

    /// A path as given (a default, before the router resolves it).
    public init(_ path: String) { self.path = path }

    /// Reads the path; an empty one is refused.
    public init(from decoder: any Decoder) throws {
        path = try decoder.singleValueContainer().decode(String.self)
        guard !path.isEmpty else { throw ConfigurationError(decoder, "must not be empty") }
    }

    public static var configurationSchema: JSONValue { ["type": "string", "format": "path", "minLength": 1] }
    public static var schemaPlaceholder: Self { Self("") }
}

/// A size setting: `64KiB`, `16MiB`, or a number of bytes.
public struct ConfigurationByteSize: ConfigurationValue, Sendable, Hashable {
    /// The size in bytes.
    public var bytes: Int

    public init(bytes: Int) { self.bytes = bytes }

    public init(from decoder: any Decoder) throws {
        let value = try ConfigurationJSON(from: decoder).value
        guard let bytes = ByteSizeText.bytes(value) else { throw ConfigurationError(decoder, "'\(value.text)' is not a size like 64KiB") }
        self.bytes = bytes
    }

    /// The size as configuration writes it: `16MiB`, `4KiB`, or the number of bytes.
    public var text: String {
        switch bytes {
        case let size where size != 0 && size % (1 << 20) == 0: "\(size >> 20)MiB"
        case let size where size != 0 && size % (1 << 10) == 0: "\(size >> 10)KiB"
        case let size: "\(size)"
        }
    }

    public static var configurationSchema: JSONValue { ["type": ["string", "integer"]] }
    public static var schemaPlaceholder: Self { Self(bytes: 1 << 20) }
}

/// What a ``CheckedString`` setting must be: a check that may also normalize the text (upper
/// case, an expanded short form), and a valid text for the schema derivation.
public protocol ConfigurationStringRule {
    /// The text as the plugin uses it; throws a ``PluginError`` saying what is wrong, which
    /// the decoder prefixes with the setting's JSON Pointer.
    static func checked(_ text: String) throws(PluginError) -> String
    /// A text the rule accepts.
    static var placeholder: String { get }
    /// The schema of the setting; `{"type": "string"}` unless given.
    static var schema: JSONValue { get }
}

extension ConfigurationStringRule {
    public static var schema: JSONValue { ["type": "string"] }
}

/// A string setting checked by `Rule` when it is read: a UUID, an address, a URI.
public struct CheckedString<Rule: ConfigurationStringRule>: ConfigurationValue, Sendable, Hashable {
    /// The text, as `Rule` normalized it.
    public var text: String

    private init(text: String) { self.text = text }

    public init(from decoder: any Decoder) throws {
        let written = try decoder.singleValueContainer().decode(String.self)
        do {
            text = try Rule.checked(written)
        } catch {
            throw ConfigurationError(decoder, error.message)
        }
    }

    public static var configurationSchema: JSONValue { Rule.schema }
    public static var schemaPlaceholder: Self { Self(text: Rule.placeholder) }
}

/// The defaults and bounds of a ``BackoffSettings`` section.
public protocol BackoffPolicy {
    /// The first wait.
    static var initialDelay: Duration { get }
    /// The longest wait.
    static var maxDelay: Duration { get }
    /// The shortest first wait taken (a zero wait would retry in a tight loop); zero unless given.
    static var shortest: Duration { get }
    /// The longest wait taken; none unless given.
    static var longest: Duration? { get }
}

extension BackoffPolicy {
    public static var shortest: Duration { .zero }
    public static var longest: Duration? { nil }
}

/// A `reconnect:` or `retry:` section: `{ initial_delay, max_delay }`, the waits between
/// attempts, doubling from the first to the longest.
public struct BackoffSettings<Policy: BackoffPolicy>: Decodable, Sendable {
    /// The first wait.
    public var initialDelay: Duration
    /// The longest wait.
    public var maxDelay: Duration

    /// The policy's defaults, for an absent section.
    public init() { (initialDelay, maxDelay) = (Policy.initialDelay, Policy.maxDelay) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        initialDelay = try container.decode(.initialDelay, default: Policy.initialDelay, atLeast: Policy.shortest, atMost: Policy.longest)
        maxDelay = try container.decode(.maxDelay, default: Policy.maxDelay, atMost: Policy.longest)
    }

    private enum CodingKeys: CodingKey { case initialDelay, maxDelay }
}
