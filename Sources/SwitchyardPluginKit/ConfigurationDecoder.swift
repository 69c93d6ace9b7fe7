import SwitchyardCore

/// Decodes a ``PluginConfiguration`` from an instance configuration's ``JSONValue``; every
/// error is a ``ConfigurationError`` naming the JSON Pointer of the value at fault.
struct ConfigurationDecoder: Decoder {
    /// The value read; nil for an absent member (a `superDecoder(forKey:)` of a missing key).
    let value: JSONValue?
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch("object") }
        return KeyedDecodingContainer(KeyedContainer(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch("array") }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    private func mismatch(_ expected: String) -> ConfigurationError {
        ConfigurationDecoder.mismatch(expected, value, codingPath)
    }

    static func mismatch(_ expected: String, _ value: JSONValue?, _ codingPath: [any CodingKey]) -> ConfigurationError {
        ConfigurationError(codingPath: codingPath, value.map { "expected \(expected), found \($0.typeName)" } ?? "is required")
    }

    /// Decodes `type` from `value`: numbers are checked to fit the integer type exactly.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue?, at codingPath: [any CodingKey]) throws -> T {
        guard let value else { throw mismatch(String(describing: type), nil, codingPath) }
        switch type {
        case is String.Type:
            guard let text = value.stringValue, let result = text as? T else { throw mismatch("string", value, codingPath) }
            return result
        case is Bool.Type:
            guard let flag = value.boolValue, let result = flag as? T else { throw mismatch("boolean", value, codingPath) }
            return result
        case is Double.Type:
            guard let number = value.doubleValue, let result = number as? T else { throw mismatch("number", value, codingPath) }
            return result
        case let integer as any FixedWidthInteger.Type:
            guard let number = value.intValue else { throw mismatch("integer", value, codingPath) }
            guard let result = integer.init(exactly: number) as? T else {
                throw ConfigurationError(codingPath: codingPath, "\(number) is not in \(integer.min)-\(integer.max)")
            }
            return result
        default:
            return try T(from: ConfigurationDecoder(value: value, codingPath: codingPath))
        }
    }
}

extension ConfigurationDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value == nil || value == .null }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Self.decode(type, from: value, at: codingPath) }
}

/// An object's members.
private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    private func name(_ key: Key) -> String { ConfigurationKey.jsonName(key.stringValue) }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [ConfigurationKey(stringValue: name(key))] }

    func contains(_ key: Key) -> Bool { members[name(key)] != nil }

    func decodeNil(forKey key: Key) -> Bool { members[name(key)].map { $0 == .null } ?? true }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ConfigurationDecoder.decode(type, from: members[name(key)], at: path(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try superDecoder(forKey: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try superDecoder(forKey: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ConfigurationDecoder(value: members["super"], codingPath: codingPath + [ConfigurationKey(stringValue: "super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { ConfigurationDecoder(value: members[name(key)], codingPath: path(key)) }
}

/// An array's elements.
private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private var path: [any CodingKey] { codingPath + [ConfigurationKey(intValue: currentIndex)] }

    private var current: JSONValue? { elements.indices.contains(currentIndex) ? elements[currentIndex] : nil }

    mutating func decodeNil() -> Bool {
        guard current == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try ConfigurationDecoder.decode(type, from: current, at: path)
        currentIndex += 1
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try superDecoder().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try superDecoder().unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = ConfigurationDecoder(value: current, codingPath: path)
        currentIndex += 1
        return decoder
    }
}
