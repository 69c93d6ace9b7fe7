import SwitchyardCore

extension Condition.Node {
    /// The node in Boolean position: comparisons and connectives directly, other values by
    /// truthiness (see ``Condition/isTruthy(_:)``).
    func truth(in scope: inout EnvelopeScope) -> Bool {
        switch self {
        case .all(let terms):
            for term in terms where !term.truth(in: &scope) { return false }
            return true
        case .any(let terms):
            for term in terms where term.truth(in: &scope) { return true }
            return false
        case .not(let operand):
            return !operand.truth(in: &scope)
        case .exists(let field):
            return scope.value(of: field) != nil
        case .compare(let left, let op, let right):
            let lhs = left.value(in: &scope) ?? .null
            let rhs = right.value(in: &scope) ?? .null
            return Condition.apply(op, lhs, rhs)
        case .matches(let operand, let pattern):
            guard case .string(let text)? = operand.value(in: &scope) else { return false }
            return pattern.matches(text)
        case .oneOf(let operand, let candidates):
            let value = operand.value(in: &scope) ?? .null
            return candidates.contains { Condition.looselyEqual(value, $0) }
        case .literal, .field, .negate, .call:
            return Condition.isTruthy(value(in: &scope))
        }
    }

    /// The node's value; `nil` for a field that is absent. Boolean nodes give `.bool`.
    func value(in scope: inout EnvelopeScope) -> JSONValue? {
        switch self {
        case .literal(let value):
            return value
        case .field(let field):
            return scope.value(of: field)
        case .negate(let operand):
            switch operand.value(in: &scope) {
            case .int(let number)?:
                let (negated, overflow) = Int(0).subtractingReportingOverflow(number)
                return overflow ? .double(-Double(number)) : .int(negated)
            case .double(let number)?:
                return .double(-number)
            default:
                return nil
            }
        case .call(let function, let argument):
            let value = argument.value(in: &scope)
            switch (function, value) {
            case (.len, .string(let text)?): return .int(text.count)
            case (.len, .array(let elements)?): return .int(elements.count)
            case (.len, .object(let members)?): return .int(members.count)
            case (.lower, .string(let text)?): return .string(text.lowercased())
            case (.upper, .string(let text)?): return .string(text.uppercased())
            default: return nil
            }
        case .exists, .not, .all, .any, .compare, .matches, .oneOf:
            return .bool(truth(in: &scope))
        }
    }
}

extension Condition {
    /// `false`, `null`, a missing field, `""` and zero are false; every other value is true.
    static func isTruthy(_ value: JSONValue?) -> Bool {
        switch value {
        case nil, .null?: false
        case .bool(let flag)?: flag
        case .int(let number)?: number != 0
        case .double(let number)?: number != 0
        case .string(let text)?: !text.isEmpty
        case .array?, .object?: true
        }
    }

    /// Applies a binary operator; operands of types it does not handle give `false`.
    static func apply(_ op: Operator, _ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        switch op {
        case .equal: return looselyEqual(lhs, rhs)
        case .notEqual: return !looselyEqual(lhs, rhs)
        case .less: return order(lhs, rhs).map { $0 < 0 } ?? false
        case .lessOrEqual: return order(lhs, rhs).map { $0 <= 0 } ?? false
        case .greater: return order(lhs, rhs).map { $0 > 0 } ?? false
        case .greaterOrEqual: return order(lhs, rhs).map { $0 >= 0 } ?? false
        case .contains:
            switch (lhs, rhs) {
            case (.string(let text), .string(let part)): return part.isEmpty || text.contains(part)
            case (.array(let elements), _): return elements.contains { looselyEqual($0, rhs) }
            default: return false
            }
        case .startsWith:
            guard case .string(let text) = lhs, case .string(let part) = rhs else { return false }
            return text.hasPrefix(part)
        case .endsWith:
            guard case .string(let text) = lhs, case .string(let part) = rhs else { return false }
            return text.hasSuffix(part)
        }
    }

    /// Equality as `==` sees it: numbers compare numerically (`1 == 1.0`), a string that is
    /// written as a number equals that number (`"1" == 1`), arrays and objects compare
    /// member by member, and values of other differing types are unequal.
    static func looselyEqual(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double),
            (.string, .int), (.string, .double), (.int, .string), (.double, .string):
            return numericOrder(lhs, rhs) == 0
        case (.array(let left), .array(let right)):
            return left.count == right.count && zip(left, right).allSatisfy { looselyEqual($0, $1) }
        case (.object(let left), .object(let right)):
            guard left.count == right.count else { return false }
            for (key, value) in left {
                guard let other = right[key], looselyEqual(value, other) else { return false }
            }
            return true
        default:
            return lhs == rhs
        }
    }

    /// The sign of `lhs - rhs` for two numbers, two strings (character order), or a string
    /// written as a number and a number; `nil` when the values are not ordered.
    static func order(_ lhs: JSONValue, _ rhs: JSONValue) -> Int? {
        if case .string(let left) = lhs, case .string(let right) = rhs {
            return left < right ? -1 : left == right ? 0 : 1
        }
        return numericOrder(lhs, rhs)
    }

    /// Compares two values as numbers, reading strings written as numbers; `nil` when
    /// either is not a number.
    private static func numericOrder(_ lhs: JSONValue, _ rhs: JSONValue) -> Int? {
        guard let left = number(lhs), let right = number(rhs) else { return nil }
        if case .int(let a) = left, case .int(let b) = right { return a < b ? -1 : a == b ? 0 : 1 }
        guard let a = left.doubleValue, let b = right.doubleValue else { return nil }
        return a < b ? -1 : a == b ? 0 : 1
    }

    /// The value as a number: numbers as they are, strings only if written as a JSON-style
    /// number (`-12`, `3.5`, `1e3`; no spaces, no `+`, no hexadecimal, `nan` or `inf`).
    static func number(_ value: JSONValue) -> JSONValue? {
        switch value {
        case .int, .double: return value
        case .string(let text): return numberLiteral(text)
        default: return nil
        }
    }

    private static func numberLiteral(_ text: String) -> JSONValue? {
        let bytes = Array(text.utf8)
        var index = 0
        func digits() -> Bool {
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
            return index > start
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard digits() else { return nil }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            isInteger = false
            guard digits() else { return nil }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            isInteger = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() else { return nil }
        }
        guard index == bytes.count else { return nil }
        if isInteger, let value = Int(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { return nil }
        return .double(value)
    }
}
