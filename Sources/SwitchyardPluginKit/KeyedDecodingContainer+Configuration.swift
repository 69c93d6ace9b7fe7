import SwitchyardCore

/// Reading settings with a default, bounds or a fixed set of values: one call checks the value
/// when decoding a configuration and writes the constraint into its derived JSON Schema.
extension KeyedDecodingContainer {
    /// The setting `key`, or `fallback` when it is absent or null; the schema states the default.
    public func decode<T: Decodable>(_ key: Key, default fallback: T) throws -> T {
        _ = try noteSchema(key) { node in
            if let json = ConfigurationSchema.json(of: fallback) { node.keywords["default"] = json }
        }
        return try decodeIfPresent(T.self, forKey: key) ?? fallback
    }

    /// The section `key`; an absent one is read as `{}`, so each member takes the default its
    /// own `init(from:)` gives it and the defaults are written once.
    public func decodeSection<T: Decodable>(_ type: T.Type = T.self, forKey key: Key) throws -> T {
        if contains(key) { return try decode(type, forKey: key) }
        return try T(from: ConfigurationDecoder(value: .object([:]), codingPath: codingPath + [key]))
    }

    /// The whole number `key`, or `fallback`; refused outside `range` (`70000 is not in 0-65535`).
    public func decode<T: Decodable & FixedWidthInteger>(_ key: Key, default fallback: T, in range: ClosedRange<T>) throws -> T {
        let value = try decode(key, default: fallback)
        return try noteBounds(key, range) ? value : checked(value, key, range)
    }

    /// The required whole number `key`, refused outside `range`.
    public func decode<T: Decodable & FixedWidthInteger>(_ key: Key, in range: ClosedRange<T>) throws -> T {
        let value = try decode(T.self, forKey: key)
        return try noteBounds(key, range) ? value : checked(value, key, range)
    }

    /// The whole number `key` when present, refused outside `range`.
    public func decodeIfPresent<T: Decodable & FixedWidthInteger>(_ key: Key, in range: ClosedRange<T>) throws -> T? {
        let value = try decodeIfPresent(T.self, forKey: key)
        return try noteBounds(key, range) ? value : value.map { try checked($0, key, range) }
    }

    /// The whole number `key`, or `fallback`; refused under `minimum` (`must be at least 1`).
    public func decode<T: Decodable & FixedWidthInteger>(_ key: Key, default fallback: T, atLeast minimum: T) throws -> T {
        let recording = try noteSchema(key) { $0.keywords["minimum"] = .int(Int(clamping: minimum)) }
        let value = try decode(key, default: fallback)
        guard value >= minimum || recording else { throw ConfigurationError(codingPath: codingPath + [key], "must be at least \(minimum)") }
        return value
    }

    /// The duration `key`, or `fallback`; refused when shorter than `minimum` (a minimum under a
    /// millisecond reads `must be positive`) or longer than `maximum`.
    public func decode(_ key: Key, default fallback: Duration, atLeast minimum: Duration = .zero, atMost maximum: Duration? = nil)
        throws -> Duration
    {
        let recording = try noteSchema(key) { _ in }
        let value = try decode(key, default: ConfigurationDuration(fallback)).duration
        guard !recording else { return value }
        guard value >= minimum else {
            let rule = minimum < .milliseconds(1) ? "must be positive" : "at least \(ConfigurationDuration(minimum).text)"
            throw ConfigurationError(codingPath: codingPath + [key], rule)
        }
        if let maximum, value > maximum {
            throw ConfigurationError(codingPath: codingPath + [key], "at most \(ConfigurationDuration(maximum).text)")
        }
        return value
    }

    /// The size `key` in bytes (`64KiB`, `16MiB` or a number), or `fallback`; refused under
    /// `minimum` (`must be a size of at least 4KiB, like 64KiB`).
    public func decode(_ key: Key, defaultBytes fallback: Int, atLeastBytes minimum: Int) throws -> Int {
        let recording = try noteSchema(key) { $0.keywords["default"] = .string(ConfigurationByteSize(bytes: fallback).text) }
        let bytes = try decodeIfPresent(ConfigurationByteSize.self, forKey: key)?.bytes ?? fallback
        guard bytes >= minimum || recording else {
            let (least, like) = (ConfigurationByteSize(bytes: minimum).text, ConfigurationByteSize(bytes: fallback).text)
            throw ConfigurationError(codingPath: codingPath + [key], "must be a size of at least \(least), like \(like)")
        }
        return bytes
    }

    /// The string `key`, or `fallback`; refused when longer than `maxLength` characters.
    public func decode(_ key: Key, default fallback: String, maxLength: Int) throws -> String {
        try decodeIfPresent(key, maxLength: maxLength) ?? fallback
    }

    /// The string `key` when present; refused when longer than `maxLength` characters.
    public func decodeIfPresent(_ key: Key, maxLength: Int) throws -> String? {
        let recording = try noteSchema(key) { $0.keywords["maxLength"] = .int(maxLength) }
        let value = try decodeIfPresent(String.self, forKey: key)
        guard let value, value.count > maxLength, !recording else { return value }
        throw ConfigurationError(codingPath: codingPath + [key], "longer than \(maxLength) characters")
    }

    /// The string `key` when present, refused unless the regular expression `pattern` matches
    /// somewhere in it (anchor it to match all), as JSON Schema's `pattern` does.
    public func decodeIfPresent(_ key: Key, matching pattern: String) throws -> String? {
        let recording = try noteSchema(key) { $0.keywords["pattern"] = .string(pattern) }
        guard let value = try decodeIfPresent(String.self, forKey: key), !recording else { return nil }
        guard (try? Regex(pattern).firstMatch(in: value)) != nil else {
            throw ConfigurationError(codingPath: codingPath + [key], "'\(value)' does not match \(pattern)")
        }
        return value
    }

    /// The required string or list `key`, refused when empty; the schema says `minLength` or `minItems`.
    public func decodeNonEmpty<T: Decodable & Collection>(_ key: Key) throws -> T {
        let recording = try noteSchema(key) { node in node.keywords[T.self == String.self ? "minLength" : "minItems"] = 1 }
        let value = try decode(T.self, forKey: key)
        guard !value.isEmpty || recording else { throw ConfigurationError(codingPath: codingPath + [key], "must not be empty") }
        return value
    }

    private func checked<T: FixedWidthInteger>(_ value: T, _ key: Key, _ range: ClosedRange<T>) throws -> T {
        guard range.contains(value) else {
            throw ConfigurationError(codingPath: codingPath + [key], "\(value) is not in \(range.lowerBound)-\(range.upperBound)")
        }
        return value
    }

    /// Notes `range` in the schema; whether this container is deriving a schema.
    private func noteBounds<T: FixedWidthInteger>(_ key: Key, _ range: ClosedRange<T>) throws -> Bool {
        try noteSchema(key) { node in
            // `1...Int.max` says "at least 1": the type's own limit is no constraint worth stating.
            if range.lowerBound != T.min { node.keywords["minimum"] = .int(Int(clamping: range.lowerBound)) }
            if range.upperBound != T.max { node.keywords["maximum"] = .int(Int(clamping: range.upperBound)) }
        }
    }

    /// Runs `note` on the schema node of `key` when this container is deriving a schema, and
    /// says whether it is: then values are placeholders, and the helpers check nothing.
    private func noteSchema(_ key: Key, _ note: (SchemaNode) -> Void) throws -> Bool {
        guard let recorder = try superDecoder(forKey: key) as? SchemaRecorder else { return false }
        note(recorder.node)
        return true
    }

}

extension ConfigurationSchema {
    /// A default value as JSON: strings, Booleans, numbers, durations, named values, arrays and
    /// maps of them; nil for a value of another type (a section's defaults are its members').
    static func json(of value: Any) -> JSONValue? {
        switch value {
        case let text as String: .string(text)
        case let flag as Bool: .bool(flag)
        case let number as any BinaryInteger: .int(Int(clamping: number))
        case let number as Double: .double(number)
        case let duration as ConfigurationDuration: .string(duration.text)
        case let path as ConfigurationPath: .string(path.path)
        case let named as any ConfigurationEnum: .string(named.rawValue)
        case let json as ConfigurationJSON: json.value
        case let list as [Any]:
            list.allSatisfy { json(of: $0) != nil } ? .array(list.compactMap(json(of:))) : nil
        case let map as [String: Any]:
            map.values.allSatisfy { json(of: $0) != nil } ? .object(map.compactMapValues(json(of:))) : nil
        default: nil
        }
    }
}
