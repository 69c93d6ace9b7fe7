import SwitchyardCore

/// One token of a `when:` expression, with its place in the text (offsets and lengths count
/// characters).
///
/// Its own type because it is the contract between ``ConditionLexer``, which makes tokens, and
/// ``ConditionParser``, which consumes them: neither needs the other's state to agree on it.
struct ConditionToken: Sendable {
    enum Kind: Sendable {
        /// A bare word: a keyword, a function name or the root of a field path.
        case word(String)
        /// `.name`: one component of a field path.
        case member(String)
        /// A quoted string, escapes resolved.
        case string(String)
        /// An integer or decimal literal (without sign).
        case number(JSONValue)
        case symbol(Symbol)
        case end
    }

    var kind: Kind
    var offset: Int
    var length: Int

    /// Punctuation and operator symbols.
    enum Symbol: String, Sendable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case andAnd = "&&"
        case orOr = "||"
        case bang = "!"
        case minus = "-"
        case comma = ","
        case leftParen = "("
        case rightParen = ")"
        case leftBracket = "["
        case rightBracket = "]"
    }
}
