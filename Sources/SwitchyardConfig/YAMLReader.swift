public import SwitchyardCore
import Yams

/// Reads YAML text into ``ConfigNode`` trees with positions and substitutes `${VAR}`.
public struct YAMLReader: Sendable {
    /// Where `${VAR}` values come from.
    public var environment: [String: String]

    /// The most nodes one document may expand to. Aliases share nodes inside the YAML
    /// library, but a configuration tree holds every use of an anchor as a copy: without a
    /// bound, nine levels of nine aliases ("billion laughs") need gigabytes.
    public var maximumNodes: Int

    /// Creates a reader that substitutes from `environment`.
    public init(environment: [String: String], maximumNodes: Int = 100_000) {
        self.environment = environment
        self.maximumNodes = maximumNodes
    }

    /// One conversion: what it has left to spend, whether it ran out, and the text's lines
    /// (where a block scalar's text starts is read from them).
    private struct Conversion {
        var remaining: Int
        var exhaustedAt: SourceLocation?
        var lines: [Substring]
    }

    /// Parses one YAML document. Unset variables and YAML errors are added to `diagnostics`;
    /// the result is `nil` only when the text is not YAML at all.
    public func read(_ text: String, file: String, diagnostics: inout [Diagnostic]) -> ConfigNode? {
        var secrets: Set<String> = []
        return read(text, file: file, diagnostics: &diagnostics, secrets: &secrets)
    }

    /// Parses one YAML document like ``read(_:file:diagnostics:)`` and adds every value
    /// substituted from the environment to `secrets`.
    public func read(_ text: String, file: String, diagnostics: inout [Diagnostic], secrets: inout Set<String>) -> ConfigNode? {
        let root: Node?
        do {
            // `.basic`: plain scalars are typed by `resolvePlain` below, so Yams' default resolver
            // is not needed, and building it compiles seven NSRegularExpressions through ICU at the
            // first parse, which keeps about 2 MB of ICU and Foundation resident in every router.
            root = try Yams.compose(yaml: text, .basic)
        } catch let error as YamlError {
            diagnostics.append(Self.diagnostic(for: error, file: file, text: text))
            return nil
        } catch {
            diagnostics.append(Diagnostic("cannot parse YAML: \(error)", at: SourceLocation(file: file, line: 1, column: 1)))
            return nil
        }
        guard let root else { return nil }
        var budget = Conversion(remaining: maximumNodes, lines: text.split(separator: "\n", omittingEmptySubsequences: false))
        let converted = convert(root, file: file, budget: &budget, diagnostics: &diagnostics, secrets: &secrets)
        if let place = budget.exhaustedAt {
            diagnostics.append(
                Diagnostic(
                    "the YAML expands to more than \(maximumNodes) nodes (aliases of aliases?); a route file must stay smaller",
                    at: place))
            return nil
        }
        return converted
    }

    static func diagnostic(for error: YamlError, file: String, text: String = "") -> Diagnostic {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            let sentence = explain(problem, at: mark, in: text)
            return Diagnostic("invalid YAML: \(sentence)", at: SourceLocation(file: file, line: mark.line, column: mark.column))
        case .reader(let problem, let offset, let value, _):
            // libyaml gives the offset of the offending character: say where it is, and what.
            let place = offset.map { Self.position(ofByte: $0, in: text) } ?? (line: 1, column: 1)
            let character = value == 0 ? "a NUL byte" : "the character U+\(String(value, radix: 16, uppercase: true))"
            return Diagnostic(
                "not YAML text: \(problem) (\(character)); a route file is UTF-8 text without control characters",
                at: SourceLocation(file: file, line: place.line, column: place.column))
        case .duplicatedKeysInMapping(let duplicates, let context):
            let mark = context.mark
            // libyaml names the mapping; the place a person fixes is the key's second use.
            let place = duplicates.sorted().first.flatMap { Self.secondUse(ofKey: $0, from: mark.line, in: text) }
            return Diagnostic(
                "duplicate key \(duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")) in the mapping at line \(mark.line)",
                at: SourceLocation(file: file, line: place?.line ?? mark.line, column: place?.column ?? mark.column)
            )
        default:
            return Diagnostic("invalid YAML: \(error)", at: SourceLocation(file: file, line: 1, column: 1))
        }
    }

    /// Where `key` is written the second time at the start of a line (block style), from line
    /// `line` on; nil when it is not found that way (a flow mapping).
    static func secondUse(ofKey key: String, from line: Int, in text: String) -> (line: Int, column: Int)? {
        var seen = 0
        for (index, content) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().dropFirst(max(0, line - 1)) {
            let indentation = content.prefix(while: { $0 == " " || $0 == "-" }).count
            let rest = content.dropFirst(indentation)
            guard rest.hasPrefix(key + ":") || rest.hasPrefix("\"\(key)\":") || rest.hasPrefix("'\(key)':") else { continue }
            seen += 1
            if seen == 2 { return (index + 1, indentation + 1) }
        }
        return nil
    }

    /// The 1-based line and column (in characters) of the byte at `offset` of `text`.
    static func position(ofByte offset: Int, in text: String) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var index = 0
        for scalar in text.unicodeScalars {
            guard index < offset else { break }
            index += String(scalar).utf8.count
            if scalar == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }

    /// libyaml's complaint, with what it usually means in a route file where it is terse.
    static func explain(_ problem: String, at mark: Mark, in text: String) -> String {
        switch problem {
        case "found character that cannot start any token":
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(max(0, mark.line - 1)).first ?? ""
            let character = line.unicodeScalars.dropFirst(max(0, mark.column - 1)).first
            if character == "\t" { return "a tab character; YAML indents with spaces only" }
            return "\(problem) (quote a value that starts with @ or `)"
        case "mapping values are not allowed in this context":
            return "\(problem) (a ': ' inside an unquoted value: quote the value)"
        default:
            return problem
        }
    }

    static func kindName(of node: Node) -> String {
        switch node {
        case .scalar: "value"
        case .mapping: "mapping"
        case .sequence: "list"
        case .alias: "alias"
        }
    }

    private func location(_ mark: Mark?, _ file: String) -> SourceLocation {
        SourceLocation(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1)
    }

    private func convert(
        _ node: Node, file: String, budget: inout Conversion, diagnostics: inout [Diagnostic], secrets: inout Set<String>
    ) -> ConfigNode {
        let here = location(node.mark, file)
        guard budget.exhaustedAt == nil else { return ConfigNode(kind: .scalar(.null), location: here) }
        guard budget.remaining > 0 else {
            budget.exhaustedAt = here
            return ConfigNode(kind: .scalar(.null), location: here)
        }
        budget.remaining -= 1
        switch node {
        case .scalar(let scalar):
            // Point at the text itself, not at an opening quote, so offsets into expressions line up.
            let quoted = scalar.style == .singleQuoted || scalar.style == .doubleQuoted
            let here = quoted ? here.advanced(by: 1) : here
            let reported = diagnostics.count
            let (text, secret) = substitute(scalar.string, at: here, diagnostics: &diagnostics, secrets: &secrets)
            let unset = diagnostics.count > reported
            let plain = scalar.style == .plain || scalar.style == .any
            let value: ConfigNode.Scalar
            if plain {
                value = Self.resolvePlain(text)
            } else {
                value = .string(text)
            }
            var converted = ConfigNode(kind: .scalar(value), location: here, isSecret: secret, hasUnsetVariable: unset)
            if scalar.style == .literal || scalar.style == .folded {
                // A block's text starts on the line after its `|` or `>`, at its indentation:
                // what is said about the text (a script's lines) is said there.
                converted.isBlockScalar = true
                let line = here.line + 1
                if line - 1 < budget.lines.count {
                    let indentation = budget.lines[line - 1].prefix(while: { $0 == " " }).count
                    converted.location = SourceLocation(file: file, line: line, column: indentation + 1)
                }
            }
            return converted
        case .mapping(let mapping):
            var members: [(key: String, keyLocation: SourceLocation, value: ConfigNode)] = []
            // Hashed, so a mapping of many keys loads in time linear in its size.
            var seen: [String: SourceLocation] = [:]
            var secret = false
            for (key, value) in mapping {
                // A key is a plain value: a mapping, a list or an alias as a key has no name a
                // route file could mean (and printing one could expand it without bound).
                guard case .scalar(let scalar) = key else {
                    diagnostics.append(
                        Diagnostic(
                            "a mapping key must be a plain value such as a name, not a \(Self.kindName(of: key))",
                            at: location(key.mark, file)))
                    continue
                }
                let keyText = scalar.string
                guard budget.exhaustedAt == nil else { break }
                let child = convert(value, file: file, budget: &budget, diagnostics: &diagnostics, secrets: &secrets)
                if let previous = seen[keyText] {
                    diagnostics.append(Diagnostic("duplicate key '\(keyText)' (first at \(previous))", at: location(key.mark, file)))
                    continue
                }
                seen[keyText] = location(key.mark, file)
                secret = secret || child.isSecret
                members.append((keyText, location(key.mark, file), child))
            }
            return ConfigNode(kind: .mapping(members), location: here, isSecret: secret)
        case .sequence(let sequence):
            var elements: [ConfigNode] = []
            for element in sequence {
                elements.append(convert(element, file: file, budget: &budget, diagnostics: &diagnostics, secrets: &secrets))
            }
            return ConfigNode(kind: .sequence(elements), location: here, isSecret: elements.contains(where: \.isSecret))
        case .alias:
            diagnostics.append(Diagnostic("unresolved YAML alias", at: here))
            return ConfigNode(kind: .scalar(.null), location: here)
        }
    }

    /// YAML 1.2 core-schema resolution of a plain scalar.
    static func resolvePlain(_ text: String) -> ConfigNode.Scalar {
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        default: break
        }
        if let number = Int(text) { return .int(number) }
        if text.hasPrefix("0x"), let number = Int(text.dropFirst(2), radix: 16) { return .int(number) }
        if text.hasPrefix("0o"), let number = Int(text.dropFirst(2), radix: 8) { return .int(number) }
        if text.first.map({ $0.isNumber || $0 == "-" || $0 == "+" || $0 == "." }) == true, let number = Double(text) {
            return .double(number)
        }
        return .string(text)
    }

    /// Replaces `${NAME}` and `${NAME:-default}`; `$${` stands for a literal `${`.
    /// Returns the text and whether anything was substituted.
    func substitute(
        _ text: String,
        at location: SourceLocation,
        diagnostics: inout [Diagnostic],
        secrets: inout Set<String>
    ) -> (String, Bool) {
        guard text.contains("$") else { return (text, false) }
        var output = ""
        var substituted = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "$", text[index...].hasPrefix("$${") {
                output += "${"
                index = text.index(index, offsetBy: 3)
                continue
            }
            guard character == "$", text[index...].hasPrefix("${"),
                let close = text[index...].firstIndex(of: "}")
            else {
                output.append(character)
                index = text.index(after: index)
                continue
            }
            let inner = text[text.index(index, offsetBy: 2)..<close]
            let column = text.distance(from: text.startIndex, to: index)
            var name = Substring(inner)
            var fallback: Substring?
            if let range = inner.range(of: ":-") {
                name = inner[..<range.lowerBound]
                fallback = inner[range.upperBound...]
            }
            if name.isEmpty || !name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
                diagnostics.append(Diagnostic("invalid variable reference '${\(inner)}'", at: location.advanced(by: column)))
            } else if let value = environment[String(name)] {
                output += value
                substituted = true
                secrets.insert(value)
            } else if let fallback {
                output += fallback
            } else {
                diagnostics.append(
                    Diagnostic("environment variable '\(name)' is not set (used as ${\(name)})", at: location.advanced(by: column))
                )
            }
            index = text.index(after: close)
        }
        return (output, substituted)
    }
}
