public import SwitchyardCore

extension QDMModel {
    /// The JSON Schema of struct `name` for the type registry: an object with every member
    /// required and no others; int64 as integers, enums as their enumerator names, sequences
    /// as arrays.
    public func schema(of name: String) -> JSONValue {
        guard let item = structs[name] else { return true }
        var properties: [String: JSONValue] = [:]
        for member in item.members { properties[member.name] = schema(of: member.kind) }
        return [
            "type": "object", "additionalProperties": false, "properties": .object(properties),
            "required": .array(item.members.map { .string($0.name) }),
        ]
    }

    private func schema(of kind: QDMMember.Kind) -> JSONValue {
        switch kind {
        case .boolean: ["type": "boolean"]
        case .byte: ["type": "integer", "minimum": 0, "maximum": 255]
        case .int16: ["type": "integer", "minimum": .int(Int(Int16.min)), "maximum": .int(Int(Int16.max))]
        case .int32: ["type": "integer", "minimum": .int(Int(Int32.min)), "maximum": .int(Int(Int32.max))]
        case .int64: ["type": "integer", "minimum": .int(Int(Int64.min)), "maximum": .int(Int(Int64.max))]
        case .float32: ["type": "number"]
        case .string: ["type": "string"]
        case .structure(let name): schema(of: name)
        case .enumeration(let name): ["enum": .array((enums[name]?.enumerators ?? []).map { .string($0) })]
        case .sequence(let element): ["type": "array", "items": schema(of: element)]
        }
    }

    /// Checks `value` against struct `name` and returns it in canonical form (enum ordinals
    /// turned into names, integral floats into integers). The error names the member path, the
    /// expected type and what came: `ChatParticipant.state: expected one of AVAILABLE, IDLE…`.
    public func conform(_ value: JSONValue, to name: String) throws(QDMError) -> JSONValue {
        guard structs[name] != nil else { throw QDMError("unknown type \(name)", at: nil) }
        return try conform(value, kind: .structure(name), path: { shortName(name) })
    }

    /// `path` builds the member path for an error only: a value that conforms costs no strings.
    private func conform(_ value: JSONValue, kind: QDMMember.Kind, path: () -> String) throws(QDMError) -> JSONValue {
        func wrong(_ expected: String) -> QDMError {
            QDMError(
                "\(path()): expected \(expected), got \(value.typeName) \(String(decoding: value.serializedBytes().prefix(40), as: UTF8.self))",
                at: nil)
        }
        func integer(_ range: ClosedRange<Int>, _ expected: String) throws(QDMError) -> JSONValue {
            guard let number = value.intValue, range.contains(number) else { throw wrong(expected) }
            return .int(number)
        }
        switch kind {
        case .boolean:
            guard case .bool = value else { throw wrong("a boolean") }
            return value
        case .byte: return try integer(0...255, "a byte (0-255)")
        case .int16: return try integer(Int(Int16.min)...Int(Int16.max), "an int16")
        case .int32: return try integer(Int(Int32.min)...Int(Int32.max), "an int32")
        case .int64: return try integer(Int.min...Int.max, "an int64")
        case .float32:
            guard let number = value.doubleValue else { throw wrong("a number (float32)") }
            return .double(number)
        case .string:
            guard case .string = value else { throw wrong("a string") }
            return value
        case .enumeration(let name):
            let names = enums[name]?.enumerators ?? []
            if let text = value.stringValue, names.contains(text) { return value }
            if let ordinal = value.intValue, names.indices.contains(ordinal) { return .string(names[ordinal]) }
            throw wrong("one of \(names.joined(separator: ", "))")
        case .sequence(let element):
            guard let items = value.arrayValue else { throw wrong("an array") }
            var result: [JSONValue] = []
            for (index, item) in items.enumerated() { result.append(try conform(item, kind: element, path: { "\(path())[\(index)]" })) }
            return .array(result)
        case .structure(let name):
            guard let fields = value.objectValue, let item = structs[name] else { throw wrong("an object (\(shortName(name)))") }
            var result: [String: JSONValue] = [:]
            for member in item.members {
                guard let field = fields[member.name] else { throw QDMError("\(path()).\(member.name): missing", at: nil) }
                result[member.name] = try conform(field, kind: member.kind, path: { "\(path()).\(member.name)" })
            }
            // Every member is there: only a larger object can hold another key.
            if fields.count > result.count,
                let extra = fields.keys.sorted().first(where: { name in !item.members.contains { $0.name == name } })
            {
                throw QDMError("\(path()).\(extra): not a member of \(shortName(name))", at: nil)
            }
            return .object(result)
        }
    }

    private func shortName(_ name: String) -> String { String(name.split(separator: ".").last ?? Substring(name)) }
}
