public import SwitchyardCore

/// A plugin's instance configuration declared once, as a `Decodable` Swift type: PluginKit
/// derives both the manifest's JSON Schema (``jsonSchema``) and the parsing (``init(config:)``)
/// from it, so the two cannot disagree.
///
/// Keys are the type's coding keys in snake_case (`scanTimeout` reads `scan_timeout`). Read a
/// setting with a default, a range or a fixed set of values through the
/// ``Swift/KeyedDecodingContainer`` helpers (``Swift/KeyedDecodingContainer/decode(_:default:)``
/// and its siblings): the one call both checks the value and writes the constraint into the
/// schema. A value whose shape JSON Schema's object keywords cannot say (`"host:port"` or
/// `{ host, port }`) is a ``ConfigurationValue`` that states its own schema.
///
/// `init(from:)` only reads; checks between settings go in ``validate()``, which the schema
/// derivation does not run (it decodes the type once with placeholder values).
///
/// ```swift
/// struct EchoConfiguration: PluginConfiguration {
///     var prefix: String
///     var delay: ConfigurationDuration
///
///     init(from decoder: any Decoder) throws {
///         let container = try decoder.container(keyedBy: CodingKeys.self)
///         prefix = try container.decode(.prefix, default: "")
///         delay = try container.decode(.delay, default: ConfigurationDuration(.milliseconds(10)))
///     }
/// }
/// ```
public protocol PluginConfiguration: Decodable, Sendable {
    /// Descriptions of settings keyed by their JSON Pointer (`"/listen/port"`), written into the
    /// schema. Optional.
    static var descriptions: [String: String] { get }

    /// Checks between settings, after decoding; throw a ``ConfigurationError`` naming the
    /// setting at fault. Optional.
    func validate() throws
}

extension PluginConfiguration {
    public static var descriptions: [String: String] { [:] }

    public func validate() throws {}

    /// Decodes and validates `config`; a ``PluginError`` whose message starts with the JSON
    /// Pointer of the offending value (`/listen/port: 70000 is not in 0-65535`) when it is wrong.
    public init(config: JSONValue) throws(PluginError) {
        do {
            self = try Self(from: ConfigurationDecoder(value: config, codingPath: []))
            try validate()
        } catch let error as ConfigurationError {
            throw PluginError(error.description)
        } catch let error as PluginError {
            throw error
        } catch {
            throw PluginError("\(error)")
        }
    }

    /// The JSON Schema of the configuration, for ``PluginManifest/config``.
    public static var jsonSchema: JSONValue {
        var schema = ConfigurationSchema.of(Self.self)
        for (pointer, text) in descriptions {
            schema = ConfigurationSchema.describing(schema, at: ConfigurationError.components(of: pointer)[...], text)
        }
        return schema
    }
}

/// A configuration value that is wrong: where (a JSON Pointer into the instance configuration)
/// and why. Its description is what the host expects: `/listen/port: 70000 is not in 0-65535`.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The JSON Pointer of the value (`""` for the whole configuration).
    public var pointer: String
    /// What is wrong with it.
    public var message: String

    /// An error about the value at `pointer` (`"/listen/port"`).
    public init(at pointer: String, _ message: String) {
        self.pointer = pointer
        self.message = message
    }

    /// An error about the value at a coding path (the keys' snake_case names, array indexes).
    public init(codingPath: [any CodingKey], _ message: String) {
        self.init(at: Self.pointer(codingPath), message)
    }

    /// An error about the value `decoder` reads.
    public init(_ decoder: any Decoder, _ message: String) {
        self.init(codingPath: decoder.codingPath, message)
    }

    public var description: String { pointer.isEmpty ? message : "\(pointer): \(message)" }

    /// The JSON Pointer of a coding path: `/listen/port`, `/buttons/0/characteristic`.
    public static func pointer(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { key in
            let name = key.intValue.map(String.init) ?? ConfigurationKey.jsonName(key.stringValue)
            return "/" + name.replacing("~", with: "~0").replacing("/", with: "~1")
        }.joined()
    }

    /// The unescaped members of a JSON Pointer.
    static func components(of pointer: String) -> [String] {
        pointer.split(separator: "/").map { String($0).replacing("~1", with: "/").replacing("~0", with: "~") }
    }
}

/// A coding key as the configuration spells it.
struct ConfigurationKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) { self.stringValue = stringValue }

    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }

    /// The configuration's name for a Swift key: `scanTimeout` → `scan_timeout`. A name with no
    /// capitals is taken as it is, so explicit snake_case coding keys work too.
    static func jsonName(_ swiftName: String) -> String {
        guard swiftName.contains(where: \.isUppercase) else { return swiftName }
        var name = ""
        var previous: Character?
        for character in swiftName {
            if character.isUppercase, let previous, previous.isLowercase || previous.isNumber { name.append("_") }
            name += character.lowercased()
            previous = character
        }
        return name
    }
}
