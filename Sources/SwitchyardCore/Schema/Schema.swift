/// A compiled JSON Schema, the subset Switchyard uses for plugin configuration and envelope
/// bodies: `type` (one name or a list), `properties`, `required`, `additionalProperties`
/// (Boolean or schema), `items`, `enum`, `const`, `minimum`, `maximum`, `minLength`,
/// `maxLength`, `pattern`, `minItems`, `maxItems`, `description` and `default`.
///
/// Keywords outside the subset are refused when the schema is compiled, so a plugin author
/// learns at once that a constraint would not be enforced.
public final class Schema: Sendable {
    /// Allowed JSON types (`null`, `boolean`, `integer`, `number`, `string`, `array`,
    /// `object`); empty means any.
    public let types: [String]
    /// Known object members.
    public let properties: [String: Schema]
    /// Members that must be present.
    public let required: [String]
    /// `nil` when any extra member is allowed, `.some(nil)` when none is, otherwise the
    /// schema extra members must match.
    public let additionalProperties: Schema??
    /// Schema of array elements.
    public let items: Schema?
    /// Allowed values.
    public let enumValues: [JSONValue]?
    /// Inclusive numeric bounds.
    public let minimum: Double?
    public let maximum: Double?
    /// String length bounds, in characters.
    public let minLength: Int?
    public let maxLength: Int?
    /// Array length bounds.
    public let minItems: Int?
    public let maxItems: Int?
    /// A regular expression strings must match somewhere (anchor it to match all).
    public let pattern: String?
    nonisolated(unsafe) private let compiledPattern: Regex<AnyRegexOutput>?
    /// Human description.
    public let summary: String?
    /// Value used when the member is absent.
    public let defaultValue: JSONValue?
    /// The `format` annotation; `path` marks a file or folder path, which the router resolves
    /// from the folder of the route file that sets it (``resolvingPaths(in:_:)``).
    public let format: String?

    private static let knownKeywords: Set<String> = [
        "type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum",
        "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "description", "default",
        "title", "$schema", "$id", "examples", "format", "secret",
    ]
    private static let typeNames: Set<String> = ["null", "boolean", "integer", "number", "string", "array", "object"]

    /// The schema that accepts everything.
    public static let any: Schema = {
        do {
            return try Schema(json: true)
        } catch {
            preconditionFailure("the schema `true` always compiles")
        }
    }()

    /// Compiles a schema; the error names the JSON pointer of the bad keyword. `true` is the
    /// schema that accepts everything, as in JSON Schema.
    public init(json: JSONValue, pointer: String = "") throws(SchemaError) {
        let members: [String: JSONValue]
        switch json {
        case .bool(true): members = [:]
        case .object(let object): members = object
        default: throw SchemaError(pointer: pointer, reason: "a schema must be an object or true, not \(json.typeName)")
        }
        for key in members.keys where !Self.knownKeywords.contains(key) {
            throw SchemaError(pointer: pointer + "/" + key, reason: "unsupported keyword '\(key)'")
        }
        switch members["type"] {
        case nil: types = []
        case .string(let name)?:
            guard Self.typeNames.contains(name) else {
                throw SchemaError(pointer: pointer + "/type", reason: "unknown type '\(name)'")
            }
            types = [name]
        case .array(let names)?:
            var collected: [String] = []
            for name in names {
                guard let name = name.stringValue, Self.typeNames.contains(name) else {
                    throw SchemaError(pointer: pointer + "/type", reason: "unknown type \(name)")
                }
                collected.append(name)
            }
            types = collected
        default:
            throw SchemaError(pointer: pointer + "/type", reason: "'type' must be a string or an array of strings")
        }
        var properties: [String: Schema] = [:]
        if let value = members["properties"] {
            guard case .object(let declared) = value else {
                throw SchemaError(pointer: pointer + "/properties", reason: "'properties' must be an object")
            }
            for (name, schema) in declared {
                properties[name] = try Schema(json: schema, pointer: pointer + "/properties/" + name)
            }
        }
        self.properties = properties
        if let value = members["required"] {
            guard case .array(let names) = value, names.allSatisfy({ $0.stringValue != nil }) else {
                throw SchemaError(pointer: pointer + "/required", reason: "'required' must be an array of strings")
            }
            required = names.compactMap(\.stringValue)
        } else {
            required = []
        }
        switch members["additionalProperties"] {
        case nil, .bool(true)?: additionalProperties = nil
        case .bool(false)?: additionalProperties = .some(nil)
        case let schema?: additionalProperties = .some(try Schema(json: schema, pointer: pointer + "/additionalProperties"))
        }
        items = try members["items"].map { schema throws(SchemaError) in try Schema(json: schema, pointer: pointer + "/items") }
        if let value = members["enum"] {
            guard case .array(let values) = value else {
                throw SchemaError(pointer: pointer + "/enum", reason: "'enum' must be an array")
            }
            enumValues = values
        } else if let value = members["const"] {
            enumValues = [value]
        } else {
            enumValues = nil
        }
        func number(_ key: String) throws(SchemaError) -> Double? {
            guard let value = members[key] else { return nil }
            guard let number = value.doubleValue else {
                throw SchemaError(pointer: pointer + "/" + key, reason: "'\(key)' must be a number")
            }
            return number
        }
        func count(_ key: String) throws(SchemaError) -> Int? {
            guard let value = members[key] else { return nil }
            guard let number = value.intValue, number >= 0 else {
                throw SchemaError(pointer: pointer + "/" + key, reason: "'\(key)' must be a non-negative integer")
            }
            return number
        }
        minimum = try number("minimum")
        maximum = try number("maximum")
        minLength = try count("minLength")
        maxLength = try count("maxLength")
        minItems = try count("minItems")
        maxItems = try count("maxItems")
        if let value = members["pattern"] {
            guard let text = value.stringValue else {
                throw SchemaError(pointer: pointer + "/pattern", reason: "'pattern' must be a string")
            }
            do {
                compiledPattern = try Regex(text)
            } catch {
                throw SchemaError(pointer: pointer + "/pattern", reason: "invalid regular expression: \(error)")
            }
            pattern = text
        } else {
            pattern = nil
            compiledPattern = nil
        }
        summary = members["description"]?.stringValue
        defaultValue = members["default"]
        format = members["format"]?.stringValue
    }

    /// Every way `value` breaks the schema; empty when it conforms. `path` names the value in
    /// messages (`timer.interval`).
    public func violations(of value: JSONValue, at path: String = "") -> [SchemaViolation] {
        var found: [SchemaViolation] = []
        check(value, at: path, into: &found)
        return found
    }

    private func check(_ value: JSONValue, at path: String, into found: inout [SchemaViolation]) {
        func report(_ reason: String) { found.append(SchemaViolation(path: path, reason: reason)) }
        if !types.isEmpty, !types.contains(where: { Self.value(value, hasType: $0) }) {
            report("expected \(types.joined(separator: " or ")), found \(value.typeName)")
            return
        }
        if let enumValues, !enumValues.contains(where: { Self.equal($0, value) }) {
            report("must be one of \(enumValues.map { $0.serialized() }.joined(separator: ", "))")
        }
        switch value {
        case .int, .double:
            if let number = value.doubleValue {
                if let minimum, number < minimum { report("must be at least \(JSONValue.double(minimum))") }
                if let maximum, number > maximum { report("must be at most \(JSONValue.double(maximum))") }
            }
        case .string(let text):
            if let minLength, text.count < minLength { report("must have at least \(Self.count(minLength, "character"))") }
            if let maxLength, text.count > maxLength { report("must have at most \(Self.count(maxLength, "character"))") }
            if let compiledPattern, let pattern, (try? compiledPattern.firstMatch(in: text)) == nil {
                report("must match /\(pattern)/")
            }
        case .array(let elements):
            if let minItems, elements.count < minItems { report("must have at least \(Self.count(minItems, "item"))") }
            if let maxItems, elements.count > maxItems { report("must have at most \(Self.count(maxItems, "item"))") }
            if let items {
                for (index, element) in elements.enumerated() {
                    items.check(element, at: "\(path)[\(index)]", into: &found)
                }
            }
        case .object(let members):
            for name in required where members[name] == nil {
                found.append(SchemaViolation(path: Self.join(path, name), reason: "is required"))
            }
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                if let schema = properties[name] {
                    schema.check(member, at: Self.join(path, name), into: &found)
                } else if case .some(let extra) = additionalProperties {
                    if let extra {
                        extra.check(member, at: Self.join(path, name), into: &found)
                    } else {
                        let known = properties.keys.sorted().joined(separator: ", ")
                        found.append(
                            SchemaViolation(
                                path: Self.join(path, name),
                                reason: "is not a known field" + (known.isEmpty ? "" : " (known: \(known))")
                            )
                        )
                    }
                }
            }
        default:
            break
        }
    }

    /// Whether `path` can exist in values of this schema: `.known` with the member's schema,
    /// `.open` when the schema does not constrain it, `.missing` naming the first component
    /// that cannot exist.
    public func lookup(_ path: some Collection<String>) -> FieldLookup {
        var schema = self
        for component in path {
            if let member = schema.properties[component] {
                schema = member
                continue
            }
            if let items = schema.items, Int(component) != nil {
                schema = items
                continue
            }
            let isObject = schema.types.isEmpty || schema.types.contains("object")
            if isObject, case .some(let extra) = schema.additionalProperties {
                guard let extra else { return .missing(component, known: schema.properties.keys.sorted()) }
                schema = extra
                continue
            }
            if !schema.types.isEmpty, !schema.types.contains("object"), !schema.types.contains("array") {
                return .missing(component, known: [])
            }
            return .open
        }
        return .known(schema)
    }

    static func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }

    static func join(_ path: String, _ name: String) -> String { path.isEmpty ? name : path + "." + name }

    static func value(_ value: JSONValue, hasType type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object): true
        case ("integer", .int): true
        case ("integer", .double(let number)): number.rounded() == number
        case ("number", .int), ("number", .double): true
        default: false
        }
    }

    static func equal(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        if let left = lhs.doubleValue, let right = rhs.doubleValue { return left == right }
        return lhs == rhs
    }
}

/// The answer of ``Schema/lookup(_:)``.
public enum FieldLookup: Sendable {
    /// The field is declared; its schema.
    case known(Schema)
    /// The schema leaves the field open (no properties declared, extra members allowed).
    case open
    /// The schema forbids the named component; `known` lists the declared members.
    case missing(String, known: [String])
}

/// A schema that is not valid.
public struct SchemaError: Error, Sendable, CustomStringConvertible {
    /// JSON pointer to the bad part of the schema.
    public var pointer: String
    /// What is wrong.
    public var reason: String

    public var description: String { "schema \(pointer.isEmpty ? "/" : pointer): \(reason)" }
}

/// A value that breaks a schema.
public struct SchemaViolation: Sendable, Equatable, CustomStringConvertible {
    /// Dotted path of the value (`timer.interval`), empty for the whole value.
    public var path: String
    /// How it breaks the schema.
    public var reason: String

    /// Creates a violation.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { path.isEmpty ? reason : "\(path) \(reason)" }
}
