/// A `From`/`To`/`Contact` value (RFC 3261 §20.10, §25.1 `name-addr`/`addr-spec`): an optional
/// display name, a URI, header parameters such as `tag` or `expires`.
public struct SIPAddress: Sendable, Equatable {
    /// The display name, unquoted.
    public var displayName: String?
    /// The URI (`sip:alice@example.com`), without angle brackets.
    public var uri: String
    /// Header parameters after the URI (`tag`, `expires`…).
    public var parameters: SIPParameters

    /// Creates an address.
    public init(displayName: String? = nil, uri: String, parameters: SIPParameters = SIPParameters()) {
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
        parameters = SIPParameters(parsing: rest)
    }

    /// The dialog tag.
    public var tag: String? { parameters["tag"] }

    /// The header value, always in `name-addr` form.
    public var text: String {
        (displayName.map { "\"\($0.quotedStringEscaped)\" " } ?? "") + "<\(uri)>" + parameters.text
    }
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
