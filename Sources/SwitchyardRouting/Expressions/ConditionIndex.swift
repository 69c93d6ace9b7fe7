import SwitchyardCore

/// The conditions of many routes from one source, looked up rather than evaluated one by one.
///
/// A condition of the form `FIELD == CONSTANT`, `FIELD in [CONSTANTS]` or
/// `FIELD startsWith "PREFIX"` — alone, or as a term of its top-level `and` — is filed under
/// that field; ``candidates(for:)`` reads each filed field of an envelope once and answers the
/// positions whose condition may hold: those whose term matches, and every position whose
/// condition has no such term (or no condition at all). So an envelope costs O(matching
/// routes), not O(routes). The answer never leaves out a position whose condition holds; it
/// may keep one whose condition does not (the rest of an `and`, say), so the route still
/// evaluates its whole condition.
public struct ConditionIndex: Sendable {
    /// Positions with no term the index can use: every envelope may be theirs.
    private let unindexed: [Int]
    private let fields: [FieldTable]
    /// How many positions the index files under a field.
    public let indexedCount: Int

    /// One field's terms: constants it may equal, prefixes it may start with.
    private struct FieldTable: Sendable {
        let field: EnvelopeField
        var equal: [Key: [Int]] = [:]
        var prefixes: [String: [Int]] = [:]
        /// The lengths (in characters) of `prefixes`' keys, so a lookup tries each length once.
        var prefixLengths: [Int] = []
    }

    /// A value as `==` compares it: numbers and strings written as numbers by their numeric
    /// value (`1`, `1.0` and `"1"` are one key), other values by themselves. Two values `==`
    /// finds equal always have the same key.
    enum Key: Hashable, Sendable {
        case number(Double)
        case string(String)
        case bool(Bool)
        case null

        /// The key of a scalar; nil for an array or object (not indexed).
        init?(_ value: JSONValue?) {
            guard let value else {
                self = .null
                return
            }
            if let number = Condition.number(value), let double = number.doubleValue {
                // -0.0 == 0.0 as numbers: one key.
                self = .number(double == 0 ? 0 : double)
                return
            }
            switch value {
            case .string(let text): self = .string(text)
            case .bool(let flag): self = .bool(flag)
            case .null: self = .null
            case .int, .double, .array, .object: return nil
            }
        }
    }

    /// An index of `conditions`, by position (nil: a route without `when:`).
    public init(conditions: [Condition?]) {
        var unindexed: [Int] = []
        var tables: [FieldTable] = []
        var indexed = 0
        for (position, condition) in conditions.enumerated() {
            guard let term = condition?.root.indexTerm else {
                unindexed.append(position)
                continue
            }
            let slot: Int
            if let existing = tables.firstIndex(where: { $0.field == term.field }) {
                slot = existing
            } else {
                tables.append(FieldTable(field: term.field))
                slot = tables.count - 1
            }
            switch term.test {
            case .equal(let keys):
                for key in Set(keys) { tables[slot].equal[key, default: []].append(position) }
            case .prefix(let prefix):
                tables[slot].prefixes[prefix, default: []].append(position)
                if !tables[slot].prefixLengths.contains(prefix.count) { tables[slot].prefixLengths.append(prefix.count) }
            }
            indexed += 1
        }
        self.unindexed = unindexed
        fields = tables
        indexedCount = indexed
    }

    /// The positions whose condition may hold for the envelope of `scope`, ascending.
    public func candidates(for scope: inout EnvelopeScope) -> [Int] {
        var found = unindexed
        for table in fields {
            let value = scope.value(of: table.field)
            if !table.equal.isEmpty, let key = Key(value), let positions = table.equal[key] {
                found.append(contentsOf: positions)
            }
            if !table.prefixes.isEmpty, case .string(let text)? = value {
                for length in table.prefixLengths where length <= text.count {
                    if let positions = table.prefixes[String(text.prefix(length))] { found.append(contentsOf: positions) }
                }
            }
        }
        // Each position is filed once, under one field: sorting is all it takes.
        found.sort()
        return found
    }
}

extension Condition.Node {
    /// A test the index can file: a field, and the constants it must equal or the prefix it
    /// must start with.
    struct IndexTerm {
        enum Test {
            case equal([ConditionIndex.Key])
            case prefix(String)
        }

        let field: EnvelopeField
        let test: Test
    }

    /// The node's index term: itself, or the first such term of a top-level `and`. Fields the
    /// route's worker may read differently than the emitter (`session`) are left out.
    var indexTerm: IndexTerm? {
        switch self {
        case .all(let terms):
            return terms.lazy.compactMap(\.indexTerm).first
        case .compare(.field(let field), .equal, .literal(let constant)), .compare(.literal(let constant), .equal, .field(let field)):
            guard Self.indexable(field), let key = ConditionIndex.Key(constant) else { return nil }
            return IndexTerm(field: field, test: .equal([key]))
        case .oneOf(.field(let field), let constants):
            guard Self.indexable(field) else { return nil }
            let keys = constants.compactMap { ConditionIndex.Key($0) }
            guard keys.count == constants.count else { return nil }
            return IndexTerm(field: field, test: .equal(keys))
        case .compare(.field(let field), .startsWith, .literal(.string(let prefix))):
            guard Self.indexable(field) else { return nil }
            return IndexTerm(field: field, test: .prefix(prefix))
        default:
            return nil
        }
    }

    private static func indexable(_ field: EnvelopeField) -> Bool {
        if case .session = field { return false }
        return true
    }
}
