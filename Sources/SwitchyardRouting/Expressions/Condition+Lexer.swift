import SwitchyardCore

extension Condition {
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

    /// One token, with its place in the text (offsets and lengths count characters).
    struct Token: Sendable {
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
    }

    /// Splits an expression into tokens.
    struct Lexer {
        let characters: [Character]
        private var position = 0

        init(_ characters: [Character]) { self.characters = characters }

        /// All tokens, ending with `.end` at the offset just past the text.
        mutating func tokenize() throws(SyntaxError) -> [Token] {
            var tokens: [Token] = []
            while true {
                while position < characters.count, characters[position].isWhitespace { position += 1 }
                guard position < characters.count else {
                    tokens.append(Token(kind: .end, offset: characters.count, length: 0))
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

        private mutating func next() throws(SyntaxError) -> Token {
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
                    throw SyntaxError(message: "expected a field name after '.'", offset: position)
                }
                while let next = peek(), Self.isMemberPart(next) { position += 1 }
                return token(.member(String(characters[(start + 1)..<position])), from: start)
            case "=":
                guard peek(1) == "=" else {
                    throw SyntaxError(message: "'=' is not an operator; compare with '=='", offset: start)
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
                    throw SyntaxError(message: "'&' is not an operator; use '&&' or 'and'", offset: start)
                }
                return symbol(.andAnd, length: 2)
            case "|":
                guard peek(1) == "|" else {
                    throw SyntaxError(message: "'|' is not an operator; use '||' or 'or'", offset: start)
                }
                return symbol(.orOr, length: 2)
            case "-": return symbol(.minus, length: 1)
            case ",": return symbol(.comma, length: 1)
            case "(": return symbol(.leftParen, length: 1)
            case ")": return symbol(.rightParen, length: 1)
            case "[": return symbol(.leftBracket, length: 1)
            case "]": return symbol(.rightBracket, length: 1)
            default:
                throw SyntaxError(message: "unexpected character '\(character)'", offset: start)
            }
        }

        private func text(from start: Int) -> String { String(characters[start..<position]) }

        private func token(_ kind: Token.Kind, from start: Int) -> Token {
            Token(kind: kind, offset: start, length: position - start)
        }

        private mutating func symbol(_ symbol: Symbol, length: Int) -> Token {
            let start = position
            position += length
            return token(.symbol(symbol), from: start)
        }

        /// `digits` or `digits.digits`; too large for `Int` becomes a decimal.
        private mutating func number() throws(SyntaxError) -> Token {
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
                throw SyntaxError(message: "invalid number '\(text(from: start))'", offset: start)
            }
            let digits = text(from: start)
            if !isDecimal, let value = Int(digits) { return token(.number(.int(value)), from: start) }
            guard let value = Double(digits), value.isFinite else {
                throw SyntaxError(message: "number '\(digits)' is too large", offset: start)
            }
            return token(.number(.double(value)), from: start)
        }

        /// A string in `quote`s with the escapes `\"`, `\'`, `\\`, `\n` and `\t`.
        private mutating func string(quote: Character) throws(SyntaxError) -> Token {
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
                        throw SyntaxError(
                            message: #"unknown escape '\\#(other)' in string; use \", \', \\, \n or \t"#,
                            offset: position
                        )
                    case nil:
                        throw SyntaxError(message: "unterminated string", offset: start)
                    }
                    position += 2
                default:
                    value.append(character)
                    position += 1
                }
            }
            throw SyntaxError(message: "unterminated string", offset: start)
        }
    }
}
