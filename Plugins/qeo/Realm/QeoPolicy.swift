import Foundation

/// A Qeo policy file: who in a realm may read and write which topics.
///
/// ```
/// [meta]
/// version=1.0
/// seqnr=2
/// [rid:1a2b]
/// org::qeo::system::*=r
/// [uid:5]
/// *=rw
/// org::qeo::sample::simplechat::ChatMessage=r<uid:5;uid:6>w<uid:5>
/// ```
///
/// `[rid:R]` applies to every device of the realm, `[uid:U]` to every device of user U (ids in
/// hex, as Qeo wrote them). A rule names a topic (`::` or `.` separated) or a prefix ending in
/// `*`; `r` grants reading, `w` writing. As in Qeo's parser, whitespace inside a line is ignored. The most specific rule that matches a topic decides; a
/// topic no rule matches is denied. Qeo's fine-grained lists (`r<uid:…>`) restrict whose data a
/// reader sees; DDS Security permissions cannot express that, so a non-empty list grants the
/// right and an empty one refuses it.
public struct QeoPolicy: Sendable, Equatable {
    /// The policy's sequence number: a replacement must carry a higher one.
    public var sequenceNumber: UInt64
    /// The sections in file order.
    public var sections: [Section]

    /// Whom a section is about.
    public enum Subject: Sendable, Hashable, CustomStringConvertible {
        case realm(UInt64)
        case user(UInt64)

        public var description: String {
            switch self {
            case .realm(let id): "rid:\(QeoIdentifier.hex(id))"
            case .user(let id): "uid:\(QeoIdentifier.hex(id))"
            }
        }
    }

    /// One `[tag]` with its rules.
    public struct Section: Sendable, Equatable {
        public var subject: Subject
        public var rules: [Rule]
        public var line: Int
    }

    /// One `topic=rights` line.
    public struct Rule: Sendable, Equatable {
        /// The Qeo topic name with `.` separators, or a prefix followed by `*`.
        public var topic: String
        public var read: Bool
        public var write: Bool
        public var line: Int

        /// The DDS topic expression (`/` separators; `*` kept).
        public var ddsTopicExpression: String { topic.replacingOccurrences(of: ".", with: "/") }

        /// How specific the rule is: an exact name beats any prefix, a longer prefix a shorter one.
        var specificity: Int { topic.hasSuffix("*") ? topic.count - 1 : Int.max }
    }

    public init(sequenceNumber: UInt64, sections: [Section]) {
        self.sequenceNumber = sequenceNumber
        self.sections = sections
    }

    /// The policy every realm starts with: its members read and write every topic.
    public static func initial(realm: UInt64) -> String {
        """
        # Qeo policy of realm \(QeoIdentifier.hex(realm)): [rid:R] applies to every device of the realm,
        # [uid:U] to every device of user U. Rules: topic=r|w|rw, a trailing * matches by prefix.
        [meta]
        version=1.0
        seqnr=1
        [rid:\(QeoIdentifier.hex(realm))]
        *=rw

        """
    }

    /// Parses `text`; errors name `file` and the line.
    public init(parsing text: String, file: String) throws(RealmError) {
        var version: String?
        var sequenceNumber: UInt64?
        var sections: [Section] = []
        var inMeta = false
        var sawSection = false
        var sawMeta = false
        // Lines end with LF or CRLF (Swift reads "\r\n" as one character).
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = index + 1
            let line = String(rawLine.filter { !$0.isWhitespace })
            func failure(_ message: String) -> RealmError { RealmError("\(file):\(number): \(message)") }
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else { throw failure("'\(line)' is not a [section]") }
                let tag = line.dropFirst().dropLast()
                sawSection = true
                if tag == "meta" {
                    guard !sawMeta else { throw failure("a second [meta] section") }
                    sawMeta = true
                    inMeta = true
                    continue
                }
                inMeta = false
                let parts = tag.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, let id = UInt64(parts[1], radix: 16) else {
                    throw failure("section [\(tag)]: expected [meta], [rid:HEX] or [uid:HEX]")
                }
                switch parts[0] {
                case "rid": sections.append(Section(subject: .realm(id), rules: [], line: number))
                case "uid": sections.append(Section(subject: .user(id), rules: [], line: number))
                default: throw failure("section [\(tag)]: expected [meta], [rid:HEX] or [uid:HEX]")
                }
                continue
            }
            guard sawSection else { throw failure("'\(line)' comes before any [section]") }
            guard let equals = line.firstIndex(of: "=") else { throw failure("'\(line)' is not key=value") }
            let key = String(line[..<equals])
            let value = String(line[line.index(after: equals)...])
            if inMeta {
                switch key {
                case "version":
                    guard value == "1.0" else { throw failure("version \(value): only 1.0 is known") }
                    version = value
                case "seqnr":
                    guard let parsed = UInt64(value) else { throw failure("seqnr '\(value)' is not a decimal number") }
                    sequenceNumber = parsed
                default: throw failure("[meta] has no setting '\(key)' (version, seqnr)")
                }
                continue
            }
            let rule = try Self.rule(topic: key, rights: value, line: number, failure: failure)
            if let previous = sections[sections.count - 1].rules.first(where: { $0.topic == rule.topic }) {
                throw failure("\(key) is already given a rule on line \(previous.line)")
            }
            sections[sections.count - 1].rules.append(rule)
        }
        guard version != nil, let sequenceNumber else {
            throw RealmError("\(file): the [meta] section needs version=1.0 and seqnr=N")
        }
        self.sequenceNumber = sequenceNumber
        self.sections = sections
    }

    private static func rule(
        topic: String, rights: String, line: Int, failure: (String) -> RealmError
    ) throws(RealmError) -> Rule {
        let name = topic.replacingOccurrences(of: "::", with: ".")
        let body = name.hasSuffix("*") ? name.dropLast() : Substring(name)
        guard !name.isEmpty, !body.contains("*"),
            body.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }),
            !body.hasPrefix("."), !body.contains("..")
        else {
            throw failure("'\(topic)' is not a topic name or a prefix ending in *")
        }
        var read = false
        var write = false
        if rights.contains("<") {
            // Fine-grained: r<uid:…;…>w<uid:…>; a right with an empty list is refused.
            var rest = Substring(rights)
            while let letter = rest.first {
                rest = rest.dropFirst()
                guard letter == "r" || letter == "R" || letter == "w" || letter == "W", rest.first == "<",
                    let close = rest.firstIndex(of: ">")
                else { throw failure("rights '\(rights)': expected r<uid:…;…> and/or w<uid:…;…>") }
                let tags = rest[rest.index(after: rest.startIndex)..<close].split(separator: ";")
                for tag in tags where !(tag.hasPrefix("uid:") && UInt64(tag.dropFirst(4), radix: 16) != nil) {
                    throw failure("rights '\(rights)': '\(tag)' is not uid:HEX")
                }
                if letter.lowercased() == "r" { read = read || !tags.isEmpty } else { write = write || !tags.isEmpty }
                rest = rest[rest.index(after: close)...]
            }
        } else {
            guard !rights.isEmpty, rights.allSatisfy({ "rRwW".contains($0) }) else {
                throw failure("rights '\(rights)': expected r, w or rw")
            }
            read = rights.contains { $0 == "r" || $0 == "R" }
            write = rights.contains { $0 == "w" || $0 == "W" }
        }
        return Rule(topic: name, read: read, write: write, line: line)
    }

    /// The rules that apply to a device of `user` in `realm`, most specific first; the realm's
    /// and the user's rules for one topic add up.
    public func rules(realm: UInt64, user: UInt64) -> [Rule] {
        var merged: [String: Rule] = [:]
        var order: [String] = []
        for section in sections where section.subject == .realm(realm) || section.subject == .user(user) {
            for rule in section.rules {
                if var existing = merged[rule.topic] {
                    existing.read = existing.read || rule.read
                    existing.write = existing.write || rule.write
                    merged[rule.topic] = existing
                } else {
                    merged[rule.topic] = rule
                    order.append(rule.topic)
                }
            }
        }
        return order.compactMap { merged[$0] }.enumerated()
            .sorted { ($0.element.specificity, -$0.offset) > ($1.element.specificity, -$1.offset) }
            .map(\.element)
    }

    /// What a device of `user` may do with `topic` (a QDM name, `.` or `::` separated): the
    /// most specific matching rule decides; no rule denies both.
    public func rights(realm: UInt64, user: UInt64, topic: String) -> (read: Bool, write: Bool) {
        let name = topic.replacingOccurrences(of: "::", with: ".")
        let rule = rules(realm: realm, user: user).first { rule in
            rule.topic.hasSuffix("*") ? name.hasPrefix(rule.topic.dropLast()) : rule.topic == name
        }
        return (rule?.read ?? false, rule?.write ?? false)
    }
}
