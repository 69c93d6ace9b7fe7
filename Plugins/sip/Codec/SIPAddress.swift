/// A `From`/`To`/`Contact` value (RFC 3261 §20.10, §25.1 `name-addr`/`addr-spec`): an optional
/// display name, a URI, header parameters such as `tag` or `expires`.
public struct SIPAddress: Sendable, Equatable {
    /// The display name, unquoted.
    public var displayName: String?
    /// The URI (`sip:alice@example.com`), without angle brackets.
    public var uri: String
    /// Header parameters after the URI, in order; a flag parameter has a nil value.
    public var parameters: [(name: String, value: String?)]

    /// Creates an address.
    public init(displayName: String? = nil, uri: String, parameters: [(name: String, value: String?)] = []) {
        self.displayName = displayName
        self.uri = uri
        self.parameters = parameters
    }

    /// Parses `"Name" <uri>;params`, `Name <uri>;params` or a bare `uri;params` (whose
    /// parameters belong to the header, §20.10).
    public init?(_ text: String) {
        let trimmed = text.trimmingWhitespace()
        var rest: Substring
        if let open = trimmed.firstIndexOutsideQuotes(of: "<") {
            guard let close = trimmed[open...].firstIndex(of: ">") else { return nil }
            let name = trimmed[..<open].trimmingWhitespaceSubstring()
            if name.hasPrefix("\""), name.hasSuffix("\""), name.count >= 2 {
                displayName = String(name.dropFirst().dropLast()).replacingEscapes()
            } else {
                displayName = name.isEmpty ? nil : name
            }
            uri = String(trimmed[trimmed.index(after: open)..<close])
            rest = trimmed[trimmed.index(after: close)...]
        } else {
            displayName = nil
            let end = trimmed.firstIndex(of: ";") ?? trimmed.endIndex
            uri = String(trimmed[..<end])
            rest = trimmed[end...]
        }
        guard uri.contains(":"), !uri.contains(" ") else { return nil }
        parameters = rest.split(separator: ";").map { $0.trimmingWhitespaceSubstring() }.filter { !$0.isEmpty }.map { parameter in
            guard let equals = parameter.firstIndex(of: "=") else { return (parameter.lowercased(), nil) }
            return (
                parameter[..<equals].trimmingWhitespaceSubstring().lowercased(),
                parameter[parameter.index(after: equals)...].trimmingWhitespaceSubstring()
            )
        }
    }

    /// A parameter's value (`""` for a flag), nil when absent.
    public subscript(parameter name: String) -> String? {
        parameters.first { $0.name == name.lowercased() }.map { $0.value ?? "" }
    }

    /// The dialog tag.
    public var tag: String? { self[parameter: "tag"] }

    /// Sets (or adds) a parameter.
    public mutating func set(parameter name: String, _ value: String?) {
        if let index = parameters.firstIndex(where: { $0.name == name.lowercased() }) {
            parameters[index].value = value
        } else {
            parameters.append((name.lowercased(), value))
        }
    }

    /// The header value, always in `name-addr` form.
    public var text: String {
        var result = displayName.map { "\"\(SIPDigest.quoted($0))\" " } ?? ""
        result += "<\(uri)>"
        for (name, value) in parameters { result += ";" + name + (value.map { "=" + $0 } ?? "") }
        return result
    }

    public static func == (lhs: SIPAddress, rhs: SIPAddress) -> Bool { lhs.text == rhs.text }
}

extension String {
    /// The first `character` not inside a quoted string.
    func firstIndexOutsideQuotes(of character: Character) -> Index? {
        var quoted = false
        var escaped = false
        for index in indices {
            let current = self[index]
            if escaped {
                escaped = false
            } else if quoted {
                if current == "\\" { escaped = true } else if current == "\"" { quoted = false }
            } else if current == "\"" {
                quoted = true
            } else if current == character {
                return index
            }
        }
        return nil
    }
}
