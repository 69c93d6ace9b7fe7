public import SwitchyardCore

/// A YAML node that remembers where it was written, so every later error can name
/// `file:line:column`.
public struct ConfigNode: Sendable {
    /// A scalar's value after YAML type resolution and `${VAR}` substitution.
    public enum Scalar: Sendable, Equatable {
        case null
        case bool(Bool)
        case int(Int)
        case double(Double)
        case string(String)
    }

    /// The shape of the node.
    public enum Kind: Sendable {
        case scalar(Scalar)
        /// Members in the order written.
        case mapping([(key: String, keyLocation: SourceLocation, value: ConfigNode)])
        case sequence([ConfigNode])
    }

    /// The node's shape and contents.
    public var kind: Kind
    /// Where it starts.
    public var location: SourceLocation
    /// Whether any part of the value came from a `${VAR}`: such values are secrets and are
    /// never printed.
    public var isSecret: Bool

    /// Whether a `${VAR}` in the value was unset (already reported): checks of the value
    /// itself would only repeat that error.
    public var hasUnsetVariable: Bool

    /// Whether the value was written as a block scalar (`|` or `>`): ``location`` is then
    /// where its text starts (the line after the `|`, at the block's indentation), and a
    /// script's lines are mapped to the file's from there.
    public var isBlockScalar = false

    /// Creates a node.
    public init(kind: Kind, location: SourceLocation, isSecret: Bool = false, hasUnsetVariable: Bool = false) {
        self.kind = kind
        self.location = location
        self.isSecret = isSecret
        self.hasUnsetVariable = hasUnsetVariable
    }

    /// The member `key` of a mapping.
    public subscript(key: String) -> ConfigNode? {
        guard case .mapping(let members) = kind else { return nil }
        return members.first(where: { $0.key == key })?.value
    }

    /// The mapping's members, or `nil` for other nodes.
    public var members: [(key: String, keyLocation: SourceLocation, value: ConfigNode)]? {
        if case .mapping(let members) = kind { return members }
        return nil
    }

    /// The elements of a sequence, or `nil`.
    public var elements: [ConfigNode]? {
        if case .sequence(let elements) = kind { return elements }
        return nil
    }

    /// The text of a string scalar (numbers and Booleans are not strings here).
    public var string: String? {
        if case .scalar(.string(let text)) = kind { return text }
        return nil
    }

    /// The text of any scalar, as written after substitution.
    public var scalarText: String? {
        guard case .scalar(let scalar) = kind else { return nil }
        switch scalar {
        case .null: return nil
        case .bool(let flag): return String(flag)
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .string(let text): return text
        }
    }

    /// A short name of the node's kind for error messages.
    public var kindName: String {
        switch kind {
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .scalar(.string): "a string"
        case .scalar(.null): "null"
        case .scalar(.bool): "a Boolean"
        case .scalar(.int), .scalar(.double): "a number"
        }
    }

    /// A node made from JSON that did not come from a file (preferences kept in the router's
    /// store): every part of it is at `location`. Object members are in key order.
    public init(json: JSONValue, location: SourceLocation) {
        let kind: Kind
        switch json {
        case .null: kind = .scalar(.null)
        case .bool(let flag): kind = .scalar(.bool(flag))
        case .int(let number): kind = .scalar(.int(number))
        case .double(let number): kind = .scalar(.double(number))
        case .string(let text): kind = .scalar(.string(text))
        case .array(let elements): kind = .sequence(elements.map { ConfigNode(json: $0, location: location) })
        case .object(let members):
            kind = .mapping(members.sorted { $0.key < $1.key }.map { ($0.key, location, ConfigNode(json: $0.value, location: location)) })
        }
        self.init(kind: kind, location: location)
    }

    /// The node as JSON with every value from the environment replaced by ``Redaction/mask``:
    /// what may be shown.
    public var maskedJSON: JSONValue {
        guard isSecret else { return json }
        switch kind {
        case .scalar: return .string(Redaction.mask)
        case .sequence(let elements): return .array(elements.map(\.maskedJSON))
        case .mapping(let members):
            return .object(Dictionary(members.map { ($0.key, $0.value.maskedJSON) }, uniquingKeysWith: { _, last in last }))
        }
    }

    /// The node as JSON (what plugins receive as their instance configuration).
    public var json: JSONValue {
        switch kind {
        case .scalar(.null): .null
        case .scalar(.bool(let flag)): .bool(flag)
        case .scalar(.int(let number)): .int(number)
        case .scalar(.double(let number)): .double(number)
        case .scalar(.string(let text)): .string(text)
        case .sequence(let elements): .array(elements.map(\.json))
        case .mapping(let members):
            .object(Dictionary(members.map { ($0.key, $0.value.json) }, uniquingKeysWith: { _, last in last }))
        }
    }

    /// The location of the value at a dotted path such as `timer.interval` or `hosts[2]`
    /// (as ``SchemaViolation/path`` writes it): its key where it has one, or the deepest node
    /// that exists on the way.
    public func location(ofPath path: String) -> SourceLocation {
        let (node, keyLocation) = descend(path)
        return keyLocation ?? node.location
    }

    /// The deepest node on a dotted path (see ``location(ofPath:)``).
    public func node(atPath path: String) -> ConfigNode { descend(path).node }

    private func descend(_ path: String) -> (node: ConfigNode, keyLocation: SourceLocation?) {
        var node = self
        var keyLocation: SourceLocation?
        for rawComponent in path.split(separator: ".") {
            var component = Substring(rawComponent)
            var indexes: [Int] = []
            while let open = component.lastIndex(of: "["), component.last == "]",
                let index = Int(component[component.index(after: open)..<component.index(before: component.endIndex)])
            {
                indexes.insert(index, at: 0)
                component = component[..<open]
            }
            if !component.isEmpty {
                guard let member = node.members?.first(where: { $0.key == component }) else {
                    return (node, keyLocation)
                }
                keyLocation = member.keyLocation
                node = member.value
            }
            for index in indexes {
                guard let elements = node.elements, elements.indices.contains(index) else { return (node, keyLocation) }
                node = elements[index]
                keyLocation = nil
            }
        }
        return (node, keyLocation)
    }
}
