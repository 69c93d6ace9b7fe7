/// Text helpers of the SIP grammar.
extension String {
    func caseInsensitiveEquals(_ other: String) -> Bool { lowercased() == other.lowercased() }

    /// `\"` → `"` and `\\` → `\` (quoted-pair).
    func replacingEscapes() -> String {
        var result = ""
        var escaped = false
        for character in self {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// The text with `"` and `\` escaped, to go between the quotes of a quoted-string.
    var quotedStringEscaped: String {
        var result = ""
        for character in self {
            if character == "\"" || character == "\\" { result.append("\\") }
            result.append(character)
        }
        return result
    }
}
