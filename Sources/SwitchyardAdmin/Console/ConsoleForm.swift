import SwitchyardCore

/// A settings form generated from a piece's preferences schema (JSON Schema): one field per
/// property — `enum` a select, `boolean` a checkbox, `integer`/`number` a number input with
/// `minimum`/`maximum`, a string a text input (a multi-line code area when its `format` is
/// `lua`: a script's source), anything else JSON in a text area —
/// `description` as help, `default` as the starting value. The same schema checks what comes
/// back (``ConsoleForm/read(_:)``), so the browser's hints are never the only check.
struct ConsoleForm {
    /// One input.
    struct Field {
        enum Kind: String {
            case text, code, number, checkbox, select, json
        }

        var key: String
        var kind: Kind
        var schema: JSONValue
        var required: Bool
    }

    /// `service` or `action`: the prefix of every field name.
    let piece: String
    /// The fields; empty with ``wholeJSON`` when the piece declares no schema.
    let fields: [Field]
    /// The piece takes a JSON object the schema does not describe field by field.
    let wholeJSON: Bool
    /// The piece's preferences hold values from the environment: shown masked, not edited.
    let locked: Bool

    init(piece: String, schema: JSONValue?, locked: Bool = false) {
        self.piece = piece
        self.locked = locked
        // Keys a form name cannot carry (`[`, `]`, `.`) fall back to JSON for the piece.
        guard let schema, case .object(let properties)? = schema["properties"],
            properties.keys.allSatisfy({ !$0.contains(where: { "[].".contains($0) }) })
        else {
            fields = []
            wholeJSON = true
            return
        }
        let required = Set(schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        // Required first, then by name: a stable order (schema objects keep none).
        let keys = properties.keys.sorted { (required.contains($0) ? 0 : 1, $0) < (required.contains($1) ? 0 : 1, $1) }
        fields = keys.map { key in
            let property = properties[key] ?? [:]
            let type = Self.type(of: property)
            let kind: Field.Kind =
                property["enum"] != nil
                ? .select
                : type == "boolean"
                    ? .checkbox
                    : type == "integer" || type == "number"
                        ? .number : type == "string" ? (property["format"] == "lua" ? .code : .text) : .json
            return Field(key: key, kind: kind, schema: property, required: required.contains(key))
        }
        wholeJSON = false
    }

    /// The form's fields as the templates render them, filled from `values` (the current
    /// preferences, or what was posted), with `errors` by field path (`service.text`).
    func view(values: JSONValue?, posted: [String: String]? = nil, errors: [String: String] = [:]) -> [String: Any] {
        if locked {
            return ["piece": piece, "locked": true, "masked": values.map { $0.serialized() } ?? "{}"]
        }
        if wholeJSON {
            let name = "\(piece).json"
            let text = posted?[name] ?? (values.map { $0.serialized() } ?? "{}")
            var view: [String: Any] = [
                "piece": piece, "whole_json": true, "json_name": name, "json_id": "f-\(piece)-json", "json_value": text,
            ]
            view["json_error"] = errors[piece] ?? errors[name]
            return view
        }
        let rendered: [[String: Any]] = fields.map { field in
            let name = "\(piece).\(field.key)"
            let current = values?[field.key] ?? field.schema["default"]
            var view: [String: Any] = [
                "name": name, "id": "f-\(piece)-\(field.key)", "label": field.key, "required": field.required,
                "is_\(field.kind.rawValue)": true,
            ]
            view["help"] = field.schema["description"]?.stringValue
            view["error"] = errors[name]
            let text = posted.map { $0[name] ?? "" } ?? Self.text(of: current, kind: field.kind)
            switch field.kind {
            case .checkbox:
                view["checked"] = posted.map { $0[name] != nil } ?? (current?.boolValue ?? false)
            case .select:
                view["options"] = (field.schema["enum"]?.arrayValue ?? []).map { option -> [String: Any] in
                    let optionText = Self.text(of: option, kind: .text)
                    return ["value": optionText, "selected": optionText == text]
                }
            case .number:
                view["value"] = text
                view["step"] = Self.type(of: field.schema) == "integer" ? "1" : "any"
                if let minimum = field.schema["minimum"] { view["min"] = minimum.serialized() }
                if let maximum = field.schema["maximum"] { view["max"] = maximum.serialized() }
            case .text, .code, .json:
                view["value"] = text
                if let pattern = field.schema["pattern"]?.stringValue { view["hint"] = "must match \(pattern)" }
            }
            return view
        }
        return ["piece": piece, "fields": rendered, "has_fields": !rendered.isEmpty]
    }

    /// The preferences a posted form gives, or the problems by field path.
    func read(_ posted: [String: String]) -> (value: JSONValue?, errors: [String: String]) {
        if locked { return (nil, [:]) }
        if wholeJSON {
            let text = posted["\(piece).json"] ?? "{}"
            guard let value = try? JSONValue(parsing: Array(text.utf8)), case .object = value else {
                return (nil, [piece: "must be a JSON object"])
            }
            return (value, [:])
        }
        var object: [String: JSONValue] = [:]
        var errors: [String: String] = [:]
        for field in fields {
            let name = "\(piece).\(field.key)"
            let text = posted[name] ?? ""
            switch field.kind {
            case .checkbox:
                object[field.key] = .bool(posted[name] != nil)
            case .number:
                guard !text.isEmpty else { continue }
                if Self.type(of: field.schema) == "integer" {
                    if let number = Int(text) { object[field.key] = .int(number) } else { errors[name] = "must be a whole number" }
                } else if let number = Double(text), number.isFinite {
                    object[field.key] = .double(number)
                } else {
                    errors[name] = "must be a number"
                }
            case .select:
                guard !text.isEmpty else { continue }
                let options = field.schema["enum"]?.arrayValue ?? []
                if let option = options.first(where: { Self.text(of: $0, kind: .text) == text }) {
                    object[field.key] = option
                } else {
                    errors[name] = "must be one of the listed values"
                }
            case .text, .code:
                guard !text.isEmpty else { continue }
                object[field.key] = .string(text)
            case .json:
                guard !text.isEmpty else { continue }
                if let value = try? JSONValue(parsing: Array(text.utf8)) { object[field.key] = value } else { errors[name] = "is not JSON" }
            }
        }
        return (errors.isEmpty ? .object(object) : nil, errors)
    }

    private static func type(of schema: JSONValue) -> String? {
        if let type = schema["type"]?.stringValue { return type }
        return schema["type"]?.arrayValue?.compactMap(\.stringValue).first { $0 != "null" }
    }

    private static func text(of value: JSONValue?, kind: Field.Kind) -> String {
        switch value {
        case nil, .null?: return ""
        case .string(let text)?: return kind == .json ? JSONValue.string(text).serialized() : text
        case let other?: return other.serialized()
        }
    }
}
