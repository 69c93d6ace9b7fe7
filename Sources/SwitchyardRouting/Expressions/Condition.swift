public import SwitchyardCore

/// A compiled `when:` expression: a Boolean test over one envelope.
///
/// The text is parsed once, into a tree, when the route is loaded; evaluating it walks the
/// tree and never re-parses. The body of an envelope is decoded at most once per dispatch,
/// and only if the expression reads it (``EnvelopeScope`` caches it).
///
/// ```swift
/// let condition = try Condition(parsing: #"subject startsWith "sensors/" and body.temp > 20"#, at: nil)
/// var scope = EnvelopeScope(envelope)
/// if condition.evaluate(&scope) { … }
/// ```
///
/// The language is described in `docs/conditions.md`. In short: field paths (`body.a.b`,
/// `headers.mqtt.qos`, `headers["x.y"]`), literals, `==` `!=` `<` `<=` `>` `>=`, `contains`,
/// `startsWith`, `endsWith`, `matches`, `in`, `and`/`&&`, `or`/`||`, `not`/`!`, parentheses
/// and the functions `exists`, `len`, `lower` and `upper`.
///
/// Evaluation never fails: a field that is absent reads as `null`, and a comparison between
/// values of types it does not apply to (ordering a string against an object, say) is
/// `false`.
public struct Condition: Sendable {
    /// The expression text as written.
    public let source: String
    let root: Node
    private let reads: [(field: EnvelopeField, offset: Int)]

    /// Parses `source`.
    ///
    /// A syntax error throws a ``Diagnostic`` whose location is `location` advanced by the
    /// 0-based column offset (in characters) of the offending token, or of the end of the
    /// text when the expression stops short. When `location` is `nil` the diagnostic has no
    /// location and its message ends with `at column N` (counting from 1) instead.
    ///
    /// - Parameters:
    ///   - source: The expression text.
    ///   - location: Where the first character of `source` is in the configuration file.
    public init(parsing source: String, at location: SourceLocation?) throws(Diagnostic) {
        self.source = source
        do throws(SyntaxError) {
            var parser = try ConditionParser(source: source)
            root = try parser.parseCondition()
            reads = parser.reads
        } catch {
            if let location {
                throw Diagnostic(error.message, at: location.advanced(by: error.offset))
            }
            throw Diagnostic("\(error.message) at column \(error.offset + 1)", at: nil)
        }
    }

    /// Evaluates the condition against one envelope.
    ///
    /// Never throws: a missing field reads as `null`, and a comparison or operator applied to
    /// types it does not handle is `false` (see `docs/conditions.md`).
    ///
    /// - Parameter scope: The envelope; its body is decoded (once) only if the expression
    ///   reads it.
    /// - Returns: Whether the envelope satisfies the condition.
    public func evaluate(_ scope: inout EnvelopeScope) -> Bool {
        root.truth(in: &scope)
    }

    /// Every envelope field the expression reads, in the order written, with the 0-based
    /// column offset (in characters) of the start of its path, for static checks against
    /// schemas. Fields tested with `exists(…)` are included.
    public var fieldReads: [(field: EnvelopeField, offset: Int)] { reads }
}

extension Condition {
    /// A syntax error: what is wrong and the 0-based character offset where.
    struct SyntaxError: Error {
        var message: String
        var offset: Int
    }

    /// The binary operators that take two arbitrary operands.
    enum Operator: Sendable {
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual
        case contains, startsWith, endsWith
    }

    /// The one-argument functions that compute a value.
    enum Function: String, Sendable {
        case len, lower, upper
    }

    /// A parsed expression. `and` and `or` chains are flat lists, so the depth of the tree
    /// is bounded by the nesting limit however long the expression is.
    indirect enum Node: Sendable {
        case literal(JSONValue)
        case field(EnvelopeField)
        case negate(Node)
        case call(Function, Node)
        case exists(EnvelopeField)
        case not(Node)
        case all([Node])
        case any([Node])
        case compare(Node, Operator, Node)
        case matches(Node, Pattern)
        case oneOf(Node, [JSONValue])
    }

    /// A regular expression compiled when the condition is parsed.
    ///
    /// `Regex` is not declared `Sendable`, but a compiled regex is immutable once built: its
    /// lazily lowered program is published atomically by the standard library, and it is
    /// forced at parse time (see ``init(pattern:at:)``) before the condition can be shared.
    final class Pattern: @unchecked Sendable {
        let source: String
        let regex: Regex<AnyRegexOutput>

        /// Compiles `pattern`, written at `offset`; the error carries the regex parser's
        /// description of the problem.
        init(pattern: String, at offset: Int) throws(SyntaxError) {
            do {
                regex = try Regex(pattern)
            } catch {
                throw SyntaxError(message: "invalid regular expression '\(pattern)': \(error)", offset: offset)
            }
            source = pattern
            // Lower the program now, once, rather than on the first envelope.
            _ = "".contains(regex)
        }

        /// Whether the regex matches somewhere in `text`.
        func matches(_ text: String) -> Bool { text.contains(regex) }
    }
}
