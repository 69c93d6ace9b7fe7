internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardRuntime

/// Compares what the stand-in sinks received with a case's `expect:` and says, line by line,
/// what differs: the diff `switchyard test` prints.
struct GraphTestVerdict {
    let testCase: GraphTestCase
    let deliveries: [CapturedDelivery]

    /// Every difference, as printable lines (empty: the case passed).
    var failures: [String] {
        var lines: [String] = []
        let listed = Set(testCase.expectations.map(\.port.description))
        // An envelope a sink refuses for its types or schema is a bug in the graph unless
        // the test expects it (`refused:`).
        for delivery in deliveries where !listed.contains(delivery.port) {
            guard let reason = delivery.refusedAsInvalid else { continue }
            lines.append("\(delivery.port) refused an envelope of input #\(delivery.input + 1): \(reason)")
            lines.append("  got: \(Self.describe(delivery.envelope))")
        }
        for expectation in testCase.expectations {
            let got = deliveries.filter { $0.port == expectation.port.description }
            lines += testCase.ordered ? compareInOrder(expectation, got) : compareInAnyOrder(expectation, got)
        }
        return lines
    }

    private func header(_ expectation: GraphTestCase.PortExpectation, got: Int) -> String {
        let expected = expectation.envelopes.count
        guard expected != got else { return "\(expectation.port) (\(expectation.location)):" }
        return "\(expectation.port) (\(expectation.location)): expected \(Self.count(expected)), got \(Self.count(got))"
    }

    /// `got` in input order, and within one input (envelopes it sent to the port by several
    /// routes, which race) in the order of `expected` where they match it: the graph settles
    /// after each input, so only the order between inputs is the graph's.
    static func aligned(_ got: [CapturedDelivery], to expected: [ExpectedEnvelope]) -> [CapturedDelivery] {
        var result: [CapturedDelivery] = []
        var position = 0
        for input in Set(got.map(\.input)).sorted() {
            var group = got.filter { $0.input == input }
            while !group.isEmpty {
                let want = position < expected.count ? expected[position] : nil
                let pick = want.flatMap { want in group.firstIndex { differences(want, $0).isEmpty } } ?? 0
                result.append(group.remove(at: pick))
                position += 1
            }
        }
        return result
    }

    private func compareInOrder(_ expectation: GraphTestCase.PortExpectation, _ arrived: [CapturedDelivery]) -> [String] {
        let got = Self.aligned(arrived, to: expectation.envelopes)
        var lines: [String] = []
        for index in 0..<max(expectation.envelopes.count, got.count) {
            let number = "#\(index + 1)"
            switch (index < expectation.envelopes.count ? expectation.envelopes[index] : nil, index < got.count ? got[index] : nil) {
            case (let expected?, let delivery?):
                let differences = Self.differences(expected, delivery)
                guard !differences.isEmpty else { continue }
                lines.append("  \(number) (expected at \(expected.location)), from input #\(delivery.input + 1):")
                lines += differences.map { "    " + $0 }
                lines.append("    got: \(Self.describe(delivery.envelope))")
            case (let expected?, nil):
                lines.append("  \(number) missing: nothing arrived for the envelope expected at \(expected.location)")
            case (nil, let delivery?):
                lines.append("  \(number) unexpected, from input #\(delivery.input + 1): \(Self.describe(delivery.envelope))")
            case (nil, nil):
                break
            }
        }
        return lines.isEmpty ? [] : [header(expectation, got: got.count)] + lines
    }

    private func compareInAnyOrder(_ expectation: GraphTestCase.PortExpectation, _ got: [CapturedDelivery]) -> [String] {
        var unused = Array(got.indices)
        var lines: [String] = []
        for expected in expectation.envelopes {
            if let match = unused.firstIndex(where: { Self.differences(expected, got[$0]).isEmpty }) {
                unused.remove(at: match)
                continue
            }
            lines.append("  no envelope matches the one expected at \(expected.location)")
            if let closest = unused.min(by: { Self.differences(expected, got[$0]).count < Self.differences(expected, got[$1]).count }) {
                lines += Self.differences(expected, got[closest]).map { "    closest: " + $0 }
            }
        }
        for index in unused { lines.append("  unexpected, from input #\(got[index].input + 1): \(Self.describe(got[index].envelope))") }
        return lines.isEmpty ? [] : [header(expectation, got: got.count)] + lines
    }

    private static func count(_ number: Int) -> String { number == 1 ? "1 envelope" : "\(number) envelopes" }

    /// How `delivery` differs from `expected`, one line per field.
    static func differences(_ expected: ExpectedEnvelope, _ delivery: CapturedDelivery) -> [String] {
        var lines: [String] = []
        let envelope = delivery.envelope
        switch (expected.refused, delivery.refusedAsInvalid) {
        case (let text?, let reason?) where !reason.contains(text):
            lines.append("refused: expected a reason containing \"\(text)\", got \"\(reason)\"")
        case (_?, nil): lines.append("refused: expected the sink to refuse it, but it took it")
        case (nil, let reason?): lines.append("refused by the sink: \(reason)")
        default: break
        }
        func field(_ name: String, _ want: String?, _ have: String) {
            if let want, want != have { lines.append("\(name): expected \(quoted(want)), got \(quoted(have))") }
        }
        field("type", expected.type, envelope.type)
        field("subject", expected.subject, envelope.subject)
        field("content_type", expected.contentType, envelope.contentType)
        for (name, value) in expected.headers where envelope.headers[name] != value {
            lines.append("headers.\(name): expected \(quoted(value)), got \(envelope.headers[name].map(quoted) ?? "(absent)")")
        }
        let body = envelope.decodedBody()
        if let want = expected.body, !JSONMatch.equal(want, body) {
            lines.append("body differs:")
            lines.append("  - expected: \(Redaction.redact(want.serialized()))")
            lines.append("  + got:      \(Redaction.redact(body.serialized()))")
        }
        if let want = expected.bodyContains { lines += JSONMatch.missing(want, in: body, at: "body") }
        if let condition = expected.condition {
            var scope = EnvelopeScope(envelope)
            if !condition.evaluate(&scope) {
                var seen: Set<String> = []
                let reads = condition.fieldReads.filter { seen.insert($0.field.description).inserted }.map { read in
                    "\(read.field) = \(scope.value(of: read.field).map { Redaction.redact($0.serialized()) } ?? "(absent)")"
                }
                lines.append("when \(condition.source) is false" + (reads.isEmpty ? "" : " (\(reads.joined(separator: ", ")))"))
            }
        }
        return lines
    }

    private static func quoted(_ text: String) -> String { "\"\(Redaction.redact(text))\"" }

    /// One line for an envelope: type, subject and body (cut at 300 characters).
    static func describe(_ envelope: Envelope) -> String {
        var text = envelope.type
        if !envelope.subject.isEmpty { text += " subject \(quoted(envelope.subject))" }
        let body = Redaction.redact(envelope.decodedBody().serialized())
        text += " " + (body.count > 300 ? body.prefix(300) + "…" : body)
        return text
    }
}

/// JSON comparison for expectations: numbers compare by value (YAML's `2` is a JSON `2.0`).
enum JSONMatch {
    static func equal(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)): return Double(a) == b
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { equal($0, $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { equal(value, $0) } ?? false }
        default: return lhs == rhs
        }
    }

    /// What of `expected` `actual` lacks: objects need the expected members (recursively),
    /// arrays the same length with each element contained, scalars equality.
    static func missing(_ expected: JSONValue, in actual: JSONValue?, at path: String) -> [String] {
        guard let actual else { return ["\(path): absent, expected \(Redaction.redact(expected.serialized()))"] }
        switch (expected, actual) {
        case (.object(let want), .object(let have)):
            return want.sorted { $0.key < $1.key }.flatMap { missing($0.value, in: have[$0.key], at: path + "." + $0.key) }
        case (.array(let want), .array(let have)) where want.count == have.count:
            return want.indices.flatMap { missing(want[$0], in: have[$0], at: path + "[\($0)]") }
        default:
            if case .object = expected {
            } else if case .array = expected {
            } else if equal(expected, actual) {
                return []
            }
            return ["\(path): expected \(Redaction.redact(expected.serialized())), got \(Redaction.redact(actual.serialized()))"]
        }
    }
}
