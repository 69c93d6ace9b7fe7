public import SwitchyardCore

/// Derives a JSON Schema from a `Decodable` type by decoding it once with a decoder that hands
/// out placeholder values and writes down what was asked for: each key (required unless read
/// with `decodeIfPresent` or a default), its type, nesting, arrays and string-keyed maps, plus
/// what the ``Swift/KeyedDecodingContainer`` helpers note (defaults, bounds, allowed values).
public enum ConfigurationSchema {
    /// The schema of `type`. A type that refuses the placeholders before it has read all its
    /// keys yields a schema without the keys it did not reach: keep checks in `validate()`.
    public static func of<T: Decodable>(_ type: T.Type) -> JSONValue {
        let root = SchemaNode()
        // The root is described by what it reads, even when it is a value with its own schema.
        _ = try? type.init(from: SchemaRecorder(node: root, codingPath: []))
        return root.json
    }

    /// The schema of `type`, an object, that also allows a value of JSON type `otherType`: a
    /// ``ConfigurationValue`` with a short form (`listen: "host:port"`, `register: false`).
    public static func of<T: Decodable>(_ type: T.Type, orAlso otherType: String) -> JSONValue {
        guard case .object(var schema) = of(type) else { return [:] }
        schema["type"] = ["object", .string(otherType)]
        return .object(schema)
    }

    /// `schema` with `description` set on the member at `path`.
    static func describing(_ schema: JSONValue, at path: ArraySlice<String>, _ text: String) -> JSONValue {
        guard case .object(var members) = schema else { return schema }
        guard let first = path.first else {
            members["description"] = .string(text)
            return .object(members)
        }
        if case .object(var properties) = members["properties"], let member = properties[first] {
            properties[first] = describing(member, at: path.dropFirst(), text)
            members["properties"] = .object(properties)
        } else if let items = members["items"], Int(first) != nil || first == "-" {
            members["items"] = describing(items, at: path.dropFirst(), text)
        }
        return .object(members)
    }
}

extension Decoder {
    /// Whether this decoder is deriving a configuration's schema rather than reading one: its
    /// values are placeholders, so an `init(from:)` that checks a value itself skips the check.
    public var isDerivingConfigurationSchema: Bool { self is SchemaRecorder }
}

/// What the recorder learnt about one value.
final class SchemaNode {
    /// Keywords set directly (`type`, `minimum`, `enum`, `default`…).
    var keywords: [String: JSONValue] = [:]
    /// An object's members in the order they were read.
    var properties: [(name: String, node: SchemaNode)] = []
    /// Members read with `contains` first (`decodeIfPresent`, a default): not required.
    var optional: Set<String> = []
    var isObject = false
    var items: SchemaNode?
    /// A string-keyed map's value schema.
    var additional: SchemaNode?

    func member(_ name: String) -> SchemaNode {
        if let existing = properties.first(where: { $0.name == name }) { return existing.node }
        let node = SchemaNode()
        properties.append((name, node))
        return node
    }

    var json: JSONValue {
        var members = keywords
        if isObject {
            members["type"] = members["type"] ?? "object"
            members["additionalProperties"] = additional.map(\.json) ?? false
            if additional == nil {
                members["properties"] = .object(
                    Dictionary(properties.map { ($0.name, $0.node.json) }, uniquingKeysWith: { first, _ in first }))
                let required = properties.map(\.name).filter { !optional.contains($0) }
                if !required.isEmpty { members["required"] = .array(required.map(JSONValue.string)) }
            }
        }
        if let items {
            members["type"] = "array"
            members["items"] = items.json
        }
        return .object(members)
    }
}

/// A string-keyed dictionary, whose values the recorder describes as `additionalProperties`.
private protocol StringKeyedMap {
    static var valueType: any Decodable.Type { get }
}

extension Dictionary: StringKeyedMap where Key == String, Value: Decodable {
    static var valueType: any Decodable.Type { Value.self }
}

/// The recording decoder.
struct SchemaRecorder: Decoder {
    let node: SchemaNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Notes the schema of `type` in `node` and returns a placeholder of it.
    static func decode<T: Decodable>(_ type: T.Type, into node: SchemaNode, at codingPath: [any CodingKey]) throws -> T {
        if let leaf = type as? any ConfigurationValue.Type {
            for (key, value) in leaf.configurationSchema.objectValue ?? [:] where node.keywords[key] == nil { node.keywords[key] = value }
            if let placeholder = leaf.schemaPlaceholder as? T { return placeholder }
        }
        let placeholder: Any?
        switch type {
        case is String.Type: (node.keywords["type"], placeholder) = ("string", "")
        case is Bool.Type: (node.keywords["type"], placeholder) = ("boolean", false)
        case is Double.Type: (node.keywords["type"], placeholder) = ("number", 0.0)
        case let integer as any FixedWidthInteger.Type:
            node.keywords["type"] = "integer"
            if integer != Int.self {
                node.keywords["minimum"] = node.keywords["minimum"] ?? .int(Int(clamping: integer.min))
                node.keywords["maximum"] = node.keywords["maximum"] ?? .int(Int(clamping: integer.max))
            }
            placeholder = integer.init(exactly: 0)
        case let map as any StringKeyedMap.Type:
            node.isObject = true
            let additional = SchemaNode()
            node.additional = additional
            _ = try? recordAny(map.valueType, into: additional, at: codingPath + [ConfigurationKey(stringValue: "*")])
            placeholder = nil
        default:
            placeholder = nil
        }
        if let placeholder = placeholder as? T { return placeholder }
        return try T(from: SchemaRecorder(node: node, codingPath: codingPath))
    }

    private static func recordAny<T: Decodable>(_ type: T.Type, into node: SchemaNode, at codingPath: [any CodingKey]) throws -> T {
        try decode(type, into: node, at: codingPath)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        node.isObject = true
        return KeyedDecodingContainer(RecordingKeyedContainer(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let items = node.items ?? SchemaNode()
        node.items = items
        return RecordingUnkeyedContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
}

extension SchemaRecorder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Self.decode(type, into: node, at: codingPath) }
}

/// Records an object's members; `contains` is how `decodeIfPresent` asks, so a member asked
/// about first is optional.
private struct RecordingKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let node: SchemaNode
    let codingPath: [any CodingKey]

    /// A string-keyed map's members come from `additionalProperties`, not from keys.
    var allKeys: [Key] { [] }

    private func name(_ key: Key) -> String { ConfigurationKey.jsonName(key.stringValue) }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [ConfigurationKey(stringValue: name(key))] }

    func contains(_ key: Key) -> Bool {
        node.optional.insert(name(key))
        return true
    }

    func decodeNil(forKey key: Key) -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try SchemaRecorder.decode(type, into: node.member(name(key)), at: path(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try superDecoder(forKey: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try superDecoder(forKey: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        SchemaRecorder(node: node.member("super"), codingPath: codingPath + [ConfigurationKey(stringValue: "super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { SchemaRecorder(node: node.member(name(key)), codingPath: path(key)) }
}

/// Records an array's element schema from one placeholder element.
private struct RecordingUnkeyedContainer: UnkeyedDecodingContainer {
    let items: SchemaNode
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: SchemaNode, codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { 1 }
    var isAtEnd: Bool { currentIndex >= 1 }

    private var path: [any CodingKey] { codingPath + [ConfigurationKey(intValue: 0)] }

    mutating func decodeNil() -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        return try SchemaRecorder.decode(type, into: items, at: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try superDecoder().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try superDecoder().unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder {
        currentIndex += 1
        return SchemaRecorder(node: items, codingPath: path)
    }
}
