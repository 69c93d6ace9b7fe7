import Mustache
public import SwitchyardCore

/// A Mustache template over an envelope, as used by `map:` values and `template:`.
///
/// Names are envelope field paths (``EnvelopeField``): `{{body.name}}`, `{{headers.mqtt.qos}}`,
/// `{{subject}}`, `{{time}}`. Output is text, never HTML-escaped. A template that is exactly one
/// tag (`"{{body.count}}"`) renders to the field's JSON value itself, so numbers stay numbers
/// and objects stay objects in `map:`. `{{json(body.text)}}` inserts a field as JSON text (a
/// string quoted and escaped, `null` when absent), so a template can write valid JSON.
public struct Template: Sendable {
    /// The template text as written.
    public let source: String
    /// Every envelope field read outside sections, with its column offset in ``source``.
    public let fieldReads: [(field: EnvelopeField, offset: Int)]
    private let compiled: MustacheTemplate?
    private let wholeField: EnvelopeField?

    /// Turns off Mustache's HTML escaping: messages are not web pages.
    private static let textPragma = "{{%CONTENT_TYPE:TEXT}}"

    /// How the values `{{name}}` inserts are escaped (`{{{name}}}` inserts them as they are).
    public enum Escaping: Sendable {
        /// Not at all: messages are not web pages.
        case verbatim
        /// Percent-encoded, all but RFC 3986's unreserved characters: for parts of a URL. A
        /// template of exactly one tag renders to text too, escaped.
        case percentEncoded
    }

    /// Parses a template; errors name the place (line and column within the text, added to
    /// `location`).
    public init(parsing source: String, at location: SourceLocation?, escaping: Escaping = .verbatim) throws(Diagnostic) {
        let pragma = escaping == .verbatim ? Self.textPragma : PercentEncodedContent.pragma
        self.source = source
        let tags = try Self.scanTags(source, at: location)
        var reads: [(field: EnvelopeField, offset: Int)] = []
        var rendered = Array(source.utf8)
        for tag in tags where tag.jsonEncoded {
            guard tag.depth == 0 else {
                throw Diagnostic(
                    "json(\(tag.name)) is inside a section, where names are relative; json(...) takes a whole field path, so use it outside sections (or build the JSON with map: or a script)",
                    at: location?.advanced(by: tag.offset))
            }
            rendered.replaceSubrange(tag.start..<tag.end, with: Self.jsonFieldTag(tag))
        }
        for tag in tags where tag.depth == 0 {
            guard let field = EnvelopeField(path: tag.name) else {
                throw Diagnostic(
                    "template reads '\(tag.name)', which is not an envelope field (fields start with one of: \(EnvelopeField.roots.joined(separator: ", ")))",
                    at: location?.advanced(by: tag.offset)
                )
            }
            reads.append((field, tag.offset))
        }
        fieldReads = reads
        if escaping == .verbatim, tags.count == 1, let only = tags.first, only.isVariable, !only.jsonEncoded, only.start == 0,
            only.end == source.utf8.count
        {
            wholeField = reads.first?.field
        } else {
            wholeField = nil
        }
        if !source.contains("{{") {
            compiled = nil
        } else {
            do {
                compiled = try MustacheTemplate(string: pragma + String(decoding: rendered, as: UTF8.self))
            } catch let error as MustacheTemplate.ParserError {
                let line = error.context.lineNumber
                let column = line == 1 ? max(1, error.context.columnNumber - pragma.count) : error.context.columnNumber
                let place = location.map {
                    SourceLocation(file: $0.file, line: $0.line + line - 1, column: line == 1 ? $0.column + column - 1 : column)
                }
                throw Diagnostic(
                    "invalid template: \(Self.describe(error.error)) at line \(line), column \(column) of the template", at: place)
            } catch {
                throw Diagnostic("invalid template: \(error)", at: location)
            }
        }
    }

    /// Renders to a JSON value: the field's own value for a one-tag template, otherwise text.
    public func render(_ scope: inout EnvelopeScope) -> JSONValue {
        if let wholeField { return scope.value(of: wholeField) ?? .null }
        return .string(renderText(&scope))
    }

    /// Renders to text.
    public func renderText(_ scope: inout EnvelopeScope) -> String {
        guard let compiled else { return source }
        let needsBody = fieldReads.contains { if case .body = $0.field { true } else { false } } || fieldReads.isEmpty
        let context = MustacheEnvelope(envelope: scope.envelope, body: needsBody ? scope.body() : nil)
        return compiled.render(context)
    }

    /// The parser's complaint as a sentence (its error cases are Swift names).
    static func describe(_ error: any Error) -> String {
        guard let error = error as? MustacheTemplate.Error else { return "\(error)" }
        return switch error {
        case .sectionCloseNameIncorrect: "a section is closed with another name than it was opened with"
        case .unfinishedName: "a tag is not finished (`{{name}}`)"
        case .expectedSectionEnd: "a section is opened ({{#name}} or {{^name}}) but never closed ({{/name}})"
        case .invalidSetDelimiter: "a delimiter change ({{=<% %>=}}) is malformed"
        case .invalidConfigVariableSyntax, .unrecognisedConfigVariable: "a {{% … }} pragma is not understood"
        case .transformAppliedToInheritanceSection, .illegalTokenInsideInheritSection, .textInsideInheritSection:
            "partials and inheritance ({{> }}, {{< }}, {{$ }}) are not supported in route templates"
        }
    }

    struct Tag {
        var name: String
        var offset: Int  // of the name, in characters
        var depth: Int
        var isVariable: Bool
        var start: Int  // UTF-8 offsets of the whole tag
        var end: Int
        /// `{{json(name)}}`: the name is the field inside the parentheses.
        var jsonEncoded = false
        var escaped = true
    }

    /// `{{json(body.text)}}` as the tag Mustache renders: `{{json.body.text}}`, a lookup through
    /// ``MustacheJSONField``; padded to the original length so the parser's columns still match.
    static func jsonFieldTag(_ tag: Tag) -> [UInt8] {
        let head = Array((tag.escaped ? "{{json." : "{{&json.").utf8) + Array(tag.name.utf8)
        let padding = max(0, tag.end - tag.start - head.count - 2)
        return head + Array(repeating: UInt8(ascii: " "), count: padding) + Array("}}".utf8)
    }

    /// Finds the names used by `{{name}}`, `{{{name}}}`, `{{&name}}`, `{{#name}}` and `{{^name}}`
    /// with their section depth, for static checks.
    static func scanTags(_ source: String, at location: SourceLocation?) throws(Diagnostic) -> [Tag] {
        let bytes = Array(source.utf8)
        var tags: [Tag] = []
        var depth = 0
        var index = 0
        while index + 1 < bytes.count {
            guard bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "{") else {
                index += 1
                continue
            }
            let start = index
            var cursor = index + 2
            var sigil: UInt8 = 0
            if cursor < bytes.count, "{&#^/!>=%<$".utf8.contains(bytes[cursor]) {
                sigil = bytes[cursor]
                cursor += 1
            }
            let closing: [UInt8] = sigil == UInt8(ascii: "{") ? Array("}}}".utf8) : Array("}}".utf8)
            var end = cursor
            while end + closing.count <= bytes.count, !bytes[end..<end + closing.count].elementsEqual(closing) { end += 1 }
            guard end + closing.count <= bytes.count else {
                let column = String(decoding: bytes[0..<start], as: UTF8.self).count
                throw Diagnostic("unclosed template tag", at: location?.advanced(by: column))
            }
            let rawName = String(decoding: bytes[cursor..<end], as: UTF8.self)
            let name = rawName.trimmingCharacters(in: " \t")
            let leading = rawName.count - rawName.drop(while: { $0 == " " || $0 == "\t" }).count
            let offset = String(decoding: bytes[0..<cursor], as: UTF8.self).count + leading
            index = end + closing.count
            switch sigil {
            case 0, UInt8(ascii: "{"), UInt8(ascii: "&"):
                guard name != "." else { break }
                var tag = Tag(name: name, offset: offset, depth: depth, isVariable: true, start: start, end: index)
                tag.escaped = sigil == 0
                if name.hasPrefix("json("), name.hasSuffix(")") {
                    let inner = String(name.dropFirst(5).dropLast())
                    tag.name = inner.trimmingCharacters(in: " \t")
                    tag.offset += 5 + (inner.count - inner.drop(while: { $0 == " " || $0 == "\t" }).count)
                    tag.jsonEncoded = true
                }
                tags.append(tag)
            case UInt8(ascii: "#"), UInt8(ascii: "^"):
                tags.append(Tag(name: name, offset: offset, depth: depth, isVariable: false, start: start, end: index))
                depth += 1
            case UInt8(ascii: "/"):
                depth = max(0, depth - 1)
            default:
                break  // comments, partials, delimiters, pragmas
            }
        }
        return tags
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        var slice = Substring(self)
        while let first = slice.first, characters.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, characters.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}

/// The root object a template renders against.
struct MustacheEnvelope: MustacheParent {
    let envelope: Envelope
    let body: JSONValue?

    func child(named name: String) -> Any? {
        switch name {
        case "id": envelope.id
        case "type": envelope.type
        case "source": envelope.source
        case "subject": envelope.subject
        case "time": envelope.timeText
        case "contentType": envelope.contentType
        case "trace": envelope.trace
        case "headers": MustacheHeaders(headers: envelope.headers, prefix: "")
        case "body": body.flatMap(MustacheJSON.bridge)
        case "session":
            envelope.session.isEmpty ? nil : (try? JSONValue(parsing: envelope.session)).flatMap(MustacheJSON.bridge)
        case "json": MustacheJSONField(root: self, path: "")
        default: nil
        }
    }

    /// A field's value by its path (``EnvelopeField``), with the body decoded once for the render.
    func value(at path: String) -> JSONValue? {
        guard let field = EnvelopeField(path: path) else { return nil }
        if case .body(let steps) = field { return body?.value(at: steps) }
        var scope = EnvelopeScope(envelope)
        return scope.value(of: field)
    }
}

/// What `{{json(path)}}` renders: Mustache hands over the path one dot-separated step at a time,
/// so each step extends the path, and printing it prints the field's value as JSON text.
struct MustacheJSONField: MustacheParent, MustacheCustomRenderable {
    let root: MustacheEnvelope
    let path: String

    func child(named name: String) -> Any? { MustacheJSONField(root: root, path: path.isEmpty ? name : path + "." + name) }

    var renderText: String { (root.value(at: path) ?? .null).serialized() }
    var isNull: Bool { false }
}

/// Header names contain dots (`mqtt.qos`); Mustache splits names at dots, so each step keeps
/// the prefix read so far until it names a header.
struct MustacheHeaders: MustacheParent {
    let headers: Headers
    let prefix: String

    func child(named name: String) -> Any? {
        let full = prefix + name
        if let value = headers[full] { return value }
        let deeper = full + "."
        guard headers.contains(where: { $0.name.hasPrefix(deeper) }) else { return nil }
        return MustacheHeaders(headers: headers, prefix: deeper)
    }
}

/// A JSON object as Mustache sees it.
struct MustacheJSON: MustacheParent, MustacheCustomRenderable {
    let members: [String: JSONValue]

    func child(named name: String) -> Any? { members[name].flatMap(Self.bridge) }

    var renderText: String { JSONValue.object(members).serialized() }
    var isNull: Bool { false }

    /// Converts a JSON value to what Mustache's renderer understands.
    static func bridge(_ value: JSONValue) -> Any? {
        switch value {
        case .null: nil
        case .bool(let flag): flag
        case .int(let number): number
        case .double: value.serialized()
        case .string(let text): text
        case .array(let elements): MustacheJSONArray(elements: elements)
        case .object(let members): MustacheJSON(members: members)
        }
    }
}

/// A JSON array as Mustache sees it: a sequence for sections, indexable by position in paths
/// (`{{body.items.1.id}}`), and JSON text when printed whole.
struct MustacheJSONArray: MustacheSequence, MustacheParent, MustacheCustomRenderable {
    let elements: [JSONValue]

    func makeIterator() -> IndexingIterator<[Any]> { elements.map { MustacheJSON.bridge($0) ?? "" }.makeIterator() }

    func child(named name: String) -> Any? {
        guard let index = Int(name), elements.indices.contains(index) else { return nil }
        return MustacheJSON.bridge(elements[index])
    }

    var renderText: String { JSONValue.array(elements).serialized() }
    var isNull: Bool { false }
}

/// Mustache's content type for `Template.Escaping.percentEncoded`.
private struct PercentEncodedContent: MustacheContentType {
    /// The pragma that selects it; registering happens once, before the first template uses it.
    static let pragma: String = {
        MustacheContentTypes.register(PercentEncodedContent(), named: "SWITCHYARD_PERCENT_ENCODED")
        return "{{%CONTENT_TYPE:SWITCHYARD_PERCENT_ENCODED}}"
    }()

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    func escapeText(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if Self.unreserved.contains(byte) {
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                escaped += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xf, radix: 16, uppercase: true)
            }
        }
        return escaped
    }
}
