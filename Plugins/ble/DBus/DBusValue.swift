/// A D-Bus value with its type: what BlueZ's properties, method arguments and signals are made
/// of. Containers keep their element signature so that empty arrays still encode correctly.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// An array of values of one type, `element` being that type's signature (`ay` → `y`).
    case array(element: String, [DBusValue])
    /// A dictionary `a{KV}`: `key` and `value` are the signatures of K and V.
    case dictionary(key: String, value: String, [DBusValue: DBusValue])
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's D-Bus signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let members): "(" + members.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    /// `ay` from bytes.
    public static func bytes(_ bytes: [UInt8]) -> DBusValue { .array(element: "y", bytes.map { .byte($0) }) }

    /// `a{sv}` from named values (options and property maps).
    public static func options(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(key: "s", value: "v", Dictionary(uniqueKeysWithValues: entries.map { (.string($0.key), .variant($0.value)) }))
    }

    /// The string of a string, object path or signature (through variants).
    public var stringValue: String? {
        switch self {
        case .string(let text), .objectPath(let text), .signature(let text): text
        case .variant(let inner): inner.stringValue
        default: nil
        }
    }

    /// The Boolean (through variants).
    public var boolValue: Bool? {
        switch self {
        case .boolean(let flag): flag
        case .variant(let inner): inner.boolValue
        default: nil
        }
    }

    /// The bytes of an `ay` (through variants).
    public var bytesValue: [UInt8]? {
        switch self {
        case .array("y", let elements):
            elements.compactMap { if case .byte(let byte) = $0 { byte } else { nil } }
        case .variant(let inner): inner.bytesValue
        default: nil
        }
    }

    /// The strings of an `as` or `ao` (through variants).
    public var stringsValue: [String]? {
        switch self {
        case .array(_, let elements): elements.compactMap(\.stringValue)
        case .variant(let inner): inner.stringsValue
        default: nil
        }
    }

    /// The entries of an `a{s…}`/`a{o…}` dictionary by their string key (through variants).
    public var dictionaryValue: [String: DBusValue]? {
        switch self {
        case .dictionary(_, _, let entries):
            Dictionary(entries.compactMap { key, value in key.stringValue.map { ($0, value) } }) { first, _ in first }
        case .variant(let inner): inner.dictionaryValue
        default: nil
        }
    }

    /// The value inside a variant, or the value itself.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }
}
