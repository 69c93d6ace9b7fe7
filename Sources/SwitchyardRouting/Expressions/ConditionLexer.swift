import SwitchyardCore

/// Splits a `when:` expression into ``ConditionToken``s.
///
/// Owns the text and the cursor moving through it; separate from ``ConditionParser`` so that
/// reading characters (quotes, escapes, numbers, two-character operators) and reading grammar
/// each keep one position of their own.
struct ConditionLexer {
    let characters: [Character]
    private var position = 0

    init(_ characters: [Character]) { self.characters = characters }

    /// All tokens, ending with `.end` at the offset just past the text.
    mutating func tokenize() throws(Condition.SyntaxError) -> [ConditionToken] {
        var tokens: [ConditionToken] = []
        while true {
            while position < characters.count, characters[position].isWhitespace { position += 1 }
            guard position < characters.count else {
                tokens.append(ConditionToken(kind: .end, offset: characters.count, length: 0))
                return tokens
            }
            tokens.append(try next())
        }
    }

    private func peek(_ ahead: Int = 0) -> Character? {
        let index = position + ahead
        return index < characters.count ? characters[index] : nil
    }

    private static func isWordStart(_ character: Character) -> Bool {
        character.isLetter || character == "_"
    }

    private static func isWordPart(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "_"
    }

    /// Path components after a dot may also start with a digit (`body.items.0`) and
    /// contain `-` (`headers.x-request-id`): there is no binary minus to confuse it with.
    private static func isMemberPart(_ character: Character) -> Bool {
        isWordPart(character) || character == "-"
    }

    private static func isDigit(_ character: Character) -> Bool {
        character.isASCII && character.isWholeNumber
    }

    private mutating func next() throws(Condition.SyntaxError) -> ConditionToken {
        let start = position
        let character = characters[position]
        if Self.isWordStart(character) {
            while let next = peek(), Self.isWordPart(next) { position += 1 }
            return token(.word(text(from: start)), from: start)
        }
        if Self.isDigit(character) { return try number() }
        switch character {
        case "\"", "'":
            return try string(quote: character)
        case ".":
            position += 1
            guard let next = peek(), Self.isMemberPart(next) else {
                throw Condition.SyntaxError(message: "expected a field name after '.'", offset: position)
            }
            while let next = peek(), Self.isMemberPart(next) { position += 1 }
            return token(.member(String(characters[(start + 1)..<position])), from: start)
        case "=":
            guard peek(1) == "=" else {
                throw Condition.SyntaxError(message: "'=' is not an operator; compare with '=='", offset: start)
            }
            return symbol(.equal, length: 2)
        case "!":
            return peek(1) == "=" ? symbol(.notEqual, length: 2) : symbol(.bang, length: 1)
        case "<":
            return peek(1) == "=" ? symbol(.lessOrEqual, length: 2) : symbol(.less, length: 1)
        case ">":
            return peek(1) == "=" ? symbol(.greaterOrEqual, length: 2) : symbol(.greater, length: 1)
        case "&":
            guard peek(1) == "&" else {
                throw Condition.SyntaxError(message: "'&' is not an operator; use '&&' or 'and'", offset: start)
            }
            return symbol(.andAnd, length: 2)
        case "|":
            guard peek(1) == "|" else {
                throw Condition.SyntaxError(message: "'|' is not an operator; use '||' or 'or'", offset: start)
            }
            return symbol(.orOr, length: 2)
        case "-": return symbol(.minus, length: 1)
        case ",": return symbol(.comma, length: 1)
        case "(": return symbol(.leftParen, length: 1)
        case ")": return symbol(.rightParen, length: 1)
        case "[": return symbol(.leftBracket, length: 1)
        case "]": return symbol(.rightBracket, length: 1)
        default:
            throw Condition.SyntaxError(message: "unexpected character '\(character)'", offset: start)
        }
    }

    private func text(from start: Int) -> String { String(characters[start..<position]) }

    private func token(_ kind: ConditionToken.Kind, from start: Int) -> ConditionToken {
        ConditionToken(kind: kind, offset: start, length: position - start)
    }

    private mutating func symbol(_ symbol: ConditionToken.Symbol, length: Int) -> ConditionToken {
        let start = position
        position += length
        return token(.symbol(symbol), from: start)
    }

    /// `digits` or `digits.digits`; too large for `Int` becomes a decimal.
    private mutating func number() throws(Condition.SyntaxError) -> ConditionToken {
        let start = position
        while let next = peek(), Self.isDigit(next) { position += 1 }
        var isDecimal = false
        if peek() == ".", let after = peek(1), Self.isDigit(after) {
            isDecimal = true
            position += 1
            while let next = peek(), Self.isDigit(next) { position += 1 }
        }
        if let next = peek(), Self.isWordPart(next) {
            while let next = peek(), Self.isWordPart(next) { position += 1 }
            throw Condition.SyntaxError(message: "invalid number '\(text(from: start))'", offset: start)
        }
        let digits = text(from: start)
        if !isDecimal, let value = Int(digits) { return token(.number(.int(value)), from: start) }
        guard let value = Double(digits), value.isFinite else {
            throw Condition.SyntaxError(message: "number '\(digits)' is too large", offset: start)
        }
        return token(.number(.double(value)), from: start)
    }

    /// A string in `quote`s with the escapes `\"`, `\'`, `\\`, `\n` and `\t`.
    private mutating func string(quote: Character) throws(Condition.SyntaxError) -> ConditionToken {
        let start = position
        position += 1
        var value = ""
        while let character = peek() {
            switch character {
            case quote:
                position += 1
                return token(.string(value), from: start)
            case "\\":
                switch peek(1) {
                case "\""?: value.append("\"")
                case "'"?: value.append("'")
                case "\\"?: value.append("\\")
                case "n"?: value.append("\n")
                case "t"?: value.append("\t")
                case let other?:
                    throw Condition.SyntaxError(
                        message: #"unknown escape '\\#(other)' in string; use \", \', \\, \n or \t"#,
                        offset: position
                    )
                case nil:
                    throw Condition.SyntaxError(message: "unterminated string", offset: start)
                }
                position += 2
            default:
                value.append(character)
                position += 1
            }
        }
        throw Condition.SyntaxError(message: "unterminated string", offset: start)
    }
}
