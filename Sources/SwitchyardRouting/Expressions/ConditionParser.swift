import SwitchyardCore

/// Builds the ``Condition/Node`` tree of a `when:` expression from its tokens.
///
/// Owns the token stream, the position in it, the nesting depth and the fields read so far:
/// state that exists only while parsing, so it lives here rather than in the compiled
/// ``Condition``, which keeps only the tree. A recursive-descent parser:
///
/// ```
/// condition  := or END
/// or         := and (("or" | "||") and)*
/// and        := comparison (("and" | "&&") comparison)*
/// comparison := unary [ compareOp unary | ("contains" | "startsWith" | "endsWith") unary
///                     | "matches" STRING | "in" array ]
/// unary      := ("not" | "!" | "-") unary | primary
/// primary    := literal | path | "exists" "(" path ")" | fn "(" or ")" | "(" or ")"
/// path       := ROOT ("." NAME | "[" (STRING | INT) "]")*
/// array      := "[" [literal ("," literal)*] "]"
/// ```
struct ConditionParser {
    /// The deepest nesting of parentheses, `not`, unary minus and function calls accepted;
    /// deeper input is a syntax error rather than a stack overflow.
    static let maximumDepth = 64

    private let characters: [Character]
    private let tokens: [ConditionToken]
    private var index = 0
    private var depth = 0
    /// Fields read so far, with the offset of each path's root.
    private(set) var reads: [(field: EnvelopeField, offset: Int)] = []

    private static let keywords: Set<String> = [
        "and", "or", "not", "contains", "startsWith", "endsWith", "matches", "in", "true", "false", "null",
    ]
    private static let functionNames = ["exists", "len", "lower", "upper"]

    init(source: String) throws(Condition.SyntaxError) {
        characters = Array(source)
        var lexer = ConditionLexer(characters)
        tokens = try lexer.tokenize()
    }

    /// The whole expression.
    mutating func parseCondition() throws(Condition.SyntaxError) -> Condition.Node {
        if case .end = current.kind {
            throw Condition.SyntaxError(message: "the condition is empty", offset: 0)
        }
        let node = try parseOr()
        guard case .end = current.kind else {
            throw Condition.SyntaxError(
                message: "unexpected \(describe(current)); expected 'and', 'or' or the end of the condition",
                offset: current.offset
            )
        }
        return node
    }

    // MARK: Tokens

    private var current: ConditionToken { tokens[index] }

    private var following: ConditionToken { tokens[min(index + 1, tokens.count - 1)] }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    private func text(of token: ConditionToken) -> String {
        String(characters[token.offset..<(token.offset + token.length)])
    }

    private func describe(_ token: ConditionToken) -> String {
        if case .end = token.kind { return "the end of the condition" }
        return "'\(text(of: token))'"
    }

    private func isWord(_ word: String, _ token: ConditionToken) -> Bool {
        if case .word(let text) = token.kind { return text == word }
        return false
    }

    private func isSymbol(_ symbol: ConditionToken.Symbol, _ token: ConditionToken) -> Bool {
        if case .symbol(let found) = token.kind { return found == symbol }
        return false
    }

    private mutating func expect(_ symbol: ConditionToken.Symbol, _ context: String) throws(Condition.SyntaxError) {
        guard isSymbol(symbol, current) else {
            throw Condition.SyntaxError(
                message: "expected '\(symbol.rawValue)' \(context) but found \(describe(current))",
                offset: current.offset
            )
        }
        advance()
    }

    /// Counts one level of nesting; deeper than ``maximumDepth`` is an error.
    private mutating func enter(_ token: ConditionToken) throws(Condition.SyntaxError) {
        depth += 1
        guard depth <= Self.maximumDepth else {
            throw Condition.SyntaxError(
                message: "the condition nests too deeply (more than \(Self.maximumDepth) levels)",
                offset: token.offset
            )
        }
    }

    private mutating func leave() { depth -= 1 }

    // MARK: Boolean structure

    private mutating func parseOr() throws(Condition.SyntaxError) -> Condition.Node {
        var terms = [try parseAnd()]
        while isWord("or", current) || isSymbol(.orOr, current) {
            advance()
            terms.append(try parseAnd())
        }
        return terms.count == 1 ? terms[0] : .any(terms)
    }

    private mutating func parseAnd() throws(Condition.SyntaxError) -> Condition.Node {
        var terms = [try parseComparison()]
        while isWord("and", current) || isSymbol(.andAnd, current) {
            advance()
            terms.append(try parseComparison())
        }
        return terms.count == 1 ? terms[0] : .all(terms)
    }

    private func comparisonOperator(_ token: ConditionToken) -> Condition.Operator? {
        switch token.kind {
        case .symbol(.equal): .equal
        case .symbol(.notEqual): .notEqual
        case .symbol(.less): .less
        case .symbol(.lessOrEqual): .lessOrEqual
        case .symbol(.greater): .greater
        case .symbol(.greaterOrEqual): .greaterOrEqual
        case .word("contains"): .contains
        case .word("startsWith"): .startsWith
        case .word("endsWith"): .endsWith
        default: nil
        }
    }

    private func isComparison(_ token: ConditionToken) -> Bool {
        comparisonOperator(token) != nil || isWord("matches", token) || isWord("in", token)
    }

    private mutating func parseComparison() throws(Condition.SyntaxError) -> Condition.Node {
        let first = current
        let left = try parseUnary()
        let operatorToken = current
        guard isComparison(operatorToken) else { return left }
        if isWord("not", first) || isSymbol(.bang, first) {
            let name = text(of: first)
            let op = text(of: operatorToken)
            throw Condition.SyntaxError(
                message: "'\(name)' binds tighter than '\(op)'; write '\(name) (a \(op) b)' to negate the "
                    + "comparison, or '(\(name) a) \(op) b' to compare the negation",
                offset: first.offset
            )
        }
        advance()
        let node: Condition.Node
        if let op = comparisonOperator(operatorToken) {
            node = .compare(left, op, try parseUnary())
        } else if isWord("matches", operatorToken) {
            guard case .string(let pattern) = current.kind else {
                throw Condition.SyntaxError(
                    message: "'matches' needs a regular expression in a string literal, found \(describe(current))",
                    offset: current.offset
                )
            }
            node = .matches(left, try Condition.Pattern(pattern: pattern, at: current.offset))
            advance()
        } else {
            node = .oneOf(left, try parseArray())
        }
        if isComparison(current) {
            throw Condition.SyntaxError(
                message: "comparisons cannot be chained; join them with 'and' or use parentheses",
                offset: current.offset
            )
        }
        return node
    }

    private mutating func parseUnary() throws(Condition.SyntaxError) -> Condition.Node {
        let token = current
        if isWord("not", token) || isSymbol(.bang, token) {
            try enter(token)
            advance()
            let operand = try parseUnary()
            leave()
            return .not(operand)
        }
        if isSymbol(.minus, token) {
            try enter(token)
            advance()
            let operand = try parseUnary()
            leave()
            switch operand {
            case .literal(.int(let value)) where value != .min: return .literal(.int(-value))
            case .literal(.int(let value)): return .literal(.double(-Double(value)))
            case .literal(.double(let value)): return .literal(.double(-value))
            case .literal(let value):
                throw Condition.SyntaxError(message: "'-' needs a number, not \(value.typeName)", offset: token.offset)
            default: return .negate(operand)
            }
        }
        return try parsePrimary()
    }

    // MARK: Values

    private mutating func parsePrimary() throws(Condition.SyntaxError) -> Condition.Node {
        let token = current
        switch token.kind {
        case .number(let value):
            advance()
            return .literal(value)
        case .string(let value):
            advance()
            return .literal(.string(value))
        case .word("true"):
            advance()
            return .literal(.bool(true))
        case .word("false"):
            advance()
            return .literal(.bool(false))
        case .word("null"):
            advance()
            return .literal(.null)
        case .word(let word) where Self.keywords.contains(word):
            throw Condition.SyntaxError(message: "expected a value but found '\(word)'", offset: token.offset)
        case .word(let word) where isSymbol(.leftParen, following):
            return try parseCall(word)
        case .word:
            return .field(try parsePath())
        case .symbol(.leftParen):
            try enter(token)
            advance()
            let inner = try parseOr()
            try expect(.rightParen, "to close '('")
            leave()
            return inner
        case .symbol(.leftBracket):
            throw Condition.SyntaxError(message: "an array literal is only allowed after 'in'", offset: token.offset)
        default:
            throw Condition.SyntaxError(message: "expected a value but found \(describe(token))", offset: token.offset)
        }
    }

    /// A field path starting at the current word.
    private mutating func parsePath() throws(Condition.SyntaxError) -> EnvelopeField {
        let rootToken = current
        guard case .word(let root) = rootToken.kind, EnvelopeField.roots.contains(root) else {
            throw Condition.SyntaxError(
                message: "unknown field \(describe(rootToken)); a field path starts with one of: "
                    + EnvelopeField.roots.joined(separator: ", "),
                offset: rootToken.offset
            )
        }
        advance()
        var rest: [String] = []
        var firstMember: ConditionToken?
        while true {
            let token = current
            if case .member(let name) = token.kind {
                rest.append(name)
                advance()
            } else if isSymbol(.leftBracket, token) {
                advance()
                switch current.kind {
                case .string(let name): rest.append(name)
                case .number(.int(let index)): rest.append(String(index))
                default:
                    throw Condition.SyntaxError(
                        message: "expected a quoted name or an index inside '[ ]' but found \(describe(current))",
                        offset: current.offset
                    )
                }
                advance()
                try expect(.rightBracket, "after the name")
            } else {
                break
            }
            if firstMember == nil { firstMember = token }
        }
        guard let field = EnvelopeField(components: root, rest) else {
            throw Condition.SyntaxError(
                message: "'\(root)' has no members; only headers, body and session paths go deeper",
                offset: firstMember?.offset ?? rootToken.offset
            )
        }
        reads.append((field: field, offset: rootToken.offset))
        return field
    }

    /// `name(argument)`; the current token is the name, the next one `(`.
    private mutating func parseCall(_ name: String) throws(Condition.SyntaxError) -> Condition.Node {
        let nameToken = current
        let function = Condition.Function(rawValue: name)
        guard function != nil || name == "exists" else {
            throw Condition.SyntaxError(
                message: "unknown function '\(name)'; the functions are "
                    + Self.functionNames.joined(separator: ", "),
                offset: nameToken.offset
            )
        }
        try enter(nameToken)
        advance()
        advance()
        let node: Condition.Node
        if let function {
            node = .call(function, try parseOr())
        } else {
            guard case .word(let word) = current.kind, !Self.keywords.contains(word),
                !isSymbol(.leftParen, following)
            else {
                throw Condition.SyntaxError(
                    message: "exists() takes a field path, such as exists(body.temp), but found \(describe(current))",
                    offset: current.offset
                )
            }
            node = .exists(try parsePath())
        }
        if isSymbol(.comma, current) {
            throw Condition.SyntaxError(message: "\(name)() takes one argument", offset: current.offset)
        }
        try expect(.rightParen, "to close \(name)(")
        leave()
        return node
    }

    /// `[literal, …]` after `in`.
    private mutating func parseArray() throws(Condition.SyntaxError) -> [JSONValue] {
        guard isSymbol(.leftBracket, current) else {
            throw Condition.SyntaxError(
                message: #"'in' needs an array literal such as [1, 2, "x"], found "# + describe(current),
                offset: current.offset
            )
        }
        advance()
        var elements: [JSONValue] = []
        if isSymbol(.rightBracket, current) {
            advance()
            return elements
        }
        while true {
            elements.append(try parseArrayElement())
            if isSymbol(.rightBracket, current) {
                advance()
                return elements
            }
            guard isSymbol(.comma, current) else {
                throw Condition.SyntaxError(
                    message: "expected ',' or ']' in the array but found \(describe(current))",
                    offset: current.offset
                )
            }
            advance()
        }
    }

    /// A string, number (optionally negative), `true`, `false` or `null`.
    private mutating func parseArrayElement() throws(Condition.SyntaxError) -> JSONValue {
        let token = current
        var value: JSONValue?
        switch token.kind {
        case .string(let text): value = .string(text)
        case .number(let number): value = number
        case .word("true"): value = .bool(true)
        case .word("false"): value = .bool(false)
        case .word("null"): value = .null
        case .symbol(.minus):
            advance()
            switch current.kind {
            case .number(.int(let number)) where number != .min: value = .int(-number)
            case .number(let number): value = number.doubleValue.map { .double(-$0) }
            default: value = nil
            }
        default: value = nil
        }
        guard let value else {
            throw Condition.SyntaxError(
                message: "array elements must be literals (strings, numbers, true, false or null), found "
                    + describe(current),
                offset: current.offset
            )
        }
        advance()
        return value
    }
}
