/// The `;name=value` parameters of a Via, a From/To/Contact address or a URI, in order. A flag
/// parameter (`;rport`, `;lr`) has a nil value. Names compare case-insensitively.
public struct SIPParameters: Sendable, Equatable {
    /// The parameters in order, names lower-cased.
    public private(set) var items: [(name: String, value: String?)]

    /// No parameters.
    public init() { items = [] }

    /// Parses `;a=1;b;c=x` (the leading `;` optional).
    public init(parsing text: some StringProtocol) {
        items = text.split(separator: ";").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }.map { parameter in
            guard let equals = parameter.firstIndex(of: "=") else { return (parameter.lowercased(), nil) }
            return (
                parameter[..<equals].trimmingWhitespaceSubstring().lowercased(),
                parameter[parameter.index(after: equals)...].trimmingWhitespaceSubstring()
            )
        }
    }

    /// A parameter's value (`""` for a flag), nil when absent.
    public subscript(name: String) -> String? {
        let key = name.lowercased()
        return items.first { $0.name == key }.map { $0.value ?? "" }
    }

    /// Sets (or adds at the end) a parameter; nil makes it a flag.
    public mutating func set(_ name: String, _ value: String?) {
        let key = name.lowercased()
        if let index = items.firstIndex(where: { $0.name == key }) {
            items[index].value = value
        } else {
            items.append((key, value))
        }
    }

    /// `;a=1;b` as written in a header.
    public var text: String { items.map { ";" + $0.name + ($0.value.map { "=" + $0 } ?? "") }.joined() }

    public static func == (lhs: SIPParameters, rhs: SIPParameters) -> Bool { lhs.text == rhs.text }
}
