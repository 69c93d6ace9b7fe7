public import SwitchyardCore

/// The keys of a route file, declared once as a JSON Schema (draft 2020-12): the loader's
/// "unknown key … (expected: …)" errors list the keys of these sections, and
/// `switchyard schema` prints it — with each installed plugin's instance configuration — for
/// editors (yaml-language-server) to complete and check route files as they are written.
public enum RouteFileSchema {
    /// The JSON Schema dialect it is written in.
    public static let dialect = "https://json-schema.org/draft/2020-12/schema"

    /// The whole schema. `plugins` maps each plugin's name to its instance configuration schema
    /// (its manifest's `config`); without plugins an instance takes any configuration.
    public static func document(plugins: [(name: String, config: JSONValue)] = []) -> JSONValue {
        let root = object(topLevel, description: "A Switchyard route file (switchyard run merges every *.yaml of a folder).")
        guard case .object(var members) = root, case .object(var properties) = members["properties"] else { return root }
        members["$schema"] = .string(dialect)
        members["title"] = "Switchyard route file"
        properties["instances"] = .object([
            "description": "Plugin instances by name: { plugin: NAME, log_level, exclusive, …the plugin's configuration… }",
            "type": "object",
            "propertyNames": ["pattern": "^[A-Za-z0-9_-]+$"],
            "additionalProperties": instance(plugins: plugins),
        ])
        members["properties"] = .object(properties)
        return allowingVariables(.object(members))
    }

    /// A value written as `${VAR}` is checked when the file is loaded, not as written: every
    /// scalar setting also accepts a string that holds a `${…}` reference.
    static let variable: JSONValue = ["type": "string", "pattern": "\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\\}"]

    static func allowingVariables(_ schema: JSONValue) -> JSONValue {
        guard case .object(var members) = schema else { return schema }
        for key in ["properties", "$defs"] {
            if case .object(let children) = members[key] { members[key] = .object(children.mapValues(allowingVariables)) }
        }
        for key in ["items", "additionalProperties", "then", "else"] {
            if let child = members[key] { members[key] = allowingVariables(child) }
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if case .array(let children) = members[key] { members[key] = .array(children.map(allowingVariables)) }
        }
        let types = members["type"].map { $0.stringValue.map { [$0] } ?? ($0.arrayValue ?? []).compactMap(\.stringValue) } ?? []
        let structured = types.contains("object") || types.contains("array") || members["properties"] != nil || members["items"] != nil
        let constrained = ["type", "enum", "const", "pattern", "minimum", "maximum", "minLength", "maxLength"].contains {
            members[$0] != nil
        }
        guard !structured, constrained else { return .object(members) }
        let description = members.removeValue(forKey: "description")
        var wrapped: [String: JSONValue] = ["anyOf": [.object(members), variable]]
        if let description { wrapped["description"] = description }
        return .object(wrapped)
    }

    /// One section's keys (`(name, description, schema)`), in the order the reference lists them.
    public typealias Keys = [(name: String, description: String, schema: JSONValue)]

    static let string: JSONValue = ["type": "string"]
    static let duration: JSONValue = ["type": ["string", "integer"], "description": "a duration: 500ms, 10s, 5m, or milliseconds"]
    static let size: JSONValue = ["type": ["string", "integer"], "description": "a size: 64KiB, 16MiB, or bytes"]
    static let port: JSONValue = ["type": "string", "pattern": "^[^.\\s]+\\.[^\\s]+$", "description": "instance.port"]
    static let path: JSONValue = ["type": "string", "format": "path", "description": "a path, relative to this file's folder"]
    static let any: JSONValue = true

    /// A closed object of `keys`.
    static func object(_ keys: Keys, required: [String] = [], description: String? = nil) -> JSONValue {
        var members: [String: JSONValue] = [
            "type": "object",
            "properties": .object(
                Dictionary(
                    keys.map { key in
                        var schema = key.schema
                        if case .object(var fields) = schema, fields["description"] == nil {
                            fields["description"] = .string(key.description)
                            schema = .object(fields)
                        } else if case .bool = schema {
                            schema = ["description": .string(key.description)]
                        }
                        return (key.name, schema)
                    }, uniquingKeysWith: { first, _ in first })),
            "additionalProperties": false,
        ]
        if !required.isEmpty { members["required"] = .array(required.map(JSONValue.string)) }
        if let description { members["description"] = .string(description) }
        return .object(members)
    }

    static func names(_ keys: Keys) -> [String] { keys.map(\.name) }

    /// What a route file is told about a key `section` does not have: the key and every key it has.
    static func unknownKey(_ key: String, in section: String, expected keys: Keys) -> String {
        "unknown key '\(key)' in \(section) (expected: \(names(keys).joined(separator: ", ")))"
    }

    static func oneOf(_ choices: JSONValue...) -> JSONValue { ["oneOf": .array(choices)] }

    static func list(_ item: JSONValue) -> JSONValue { ["type": "array", "items": item] }

    static func enumeration(_ values: [String]) -> JSONValue { ["enum": .array(values.map(JSONValue.string))] }
}
