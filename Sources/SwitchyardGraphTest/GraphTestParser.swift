import Foundation
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardRuntime

/// Reads the YAML of a test file into ``GraphTestFile``, collecting every problem with its
/// file:line:column rather than stopping at the first.
struct GraphTestParser {
    var problems: [Diagnostic] = []

    private mutating func problem(_ message: String, at node: ConfigNode) {
        problems.append(Diagnostic(message, at: node.location))
    }

    /// The members of a mapping, each key checked against `known`.
    private mutating func members(
        _ node: ConfigNode, of what: String, known: [String]
    ) -> [(key: String, keyLocation: SourceLocation, value: ConfigNode)] {
        guard let members = node.members else {
            problem("\(what) must be a mapping, not \(node.kindName)", at: node)
            return []
        }
        for member in members where !known.contains(member.key) {
            problems.append(
                Diagnostic("unknown key '\(member.key)' in \(what) (expected: \(known.joined(separator: ", ")))", at: member.keyLocation))
        }
        return members.filter { known.contains($0.key) }
    }

    private mutating func string(_ node: ConfigNode, _ what: String) -> String? {
        guard let text = node.scalarText, node.elements == nil, node.members == nil else {
            problem("\(what) must be a string, not \(node.kindName)", at: node)
            return nil
        }
        return text
    }

    private mutating func port(_ node: ConfigNode, _ what: String) -> PortReference? {
        guard let text = string(node, what) else { return nil }
        guard let port = PortReference(text) else {
            problem("\(what) must be instance.port, not '\(text)'", at: node)
            return nil
        }
        return port
    }

    private mutating func headers(_ node: ConfigNode) -> [(String, String)] {
        members(node, of: "headers", known: node.members?.map(\.key) ?? []).compactMap { member in
            string(member.value, "header '\(member.key)'").map { (member.key, $0) }
        }
    }

    mutating func file(_ root: ConfigNode, path: String) -> GraphTestFile {
        var file = GraphTestFile(path: path)
        for (key, _, value) in members(root, of: "a test file", known: ["routes", "env", "tests"]) {
            switch key {
            case "routes": file.routes = string(value, "routes")
            case "env":
                for member in members(value, of: "env", known: value.members?.map(\.key) ?? []) {
                    if let text = string(member.value, "env.\(member.key)") { file.environment[member.key] = text }
                }
            default:
                guard let elements = value.elements else {
                    problem("tests must be a list of test cases", at: value)
                    continue
                }
                file.cases = elements.compactMap { testCase($0) }
            }
        }
        if root["tests"] == nil { problem("a test file needs 'tests:', a list of test cases", at: root) }
        var names: Set<String> = []
        for testCase in file.cases where !names.insert(testCase.name).inserted {
            problems.append(Diagnostic("a test named '\(testCase.name)' is already in this file", at: testCase.location))
        }
        return file
    }

    private static let caseKeys = [
        "name", "input", "expect", "order", "sinks", "services", "enable", "disable", "dead_letters", "timeout", "clock",
    ]

    private mutating func testCase(_ node: ConfigNode) -> GraphTestCase? {
        let fields = members(node, of: "a test case", known: Self.caseKeys)
        guard let nameNode = node["name"], let name = string(nameNode, "name") else {
            if node.members != nil { problem("a test case needs a name", at: node) }
            return nil
        }
        var testCase = GraphTestCase(name: name, location: node.location)
        for (key, _, value) in fields {
            switch key {
            case "input":
                guard let elements = value.elements else {
                    problem("input must be a list of envelopes", at: value)
                    continue
                }
                testCase.inputs = elements.compactMap { input($0) }
            case "expect":
                for member in members(value, of: "expect", known: value.members?.map(\.key) ?? []) {
                    guard let port = PortReference(member.key) else {
                        problems.append(Diagnostic("'\(member.key)' in expect must be instance.port", at: member.keyLocation))
                        continue
                    }
                    guard let elements = member.value.elements else {
                        problem("expect.\(member.key) must be a list of envelopes ([] for none)", at: member.value)
                        continue
                    }
                    testCase.expectations.append(
                        .init(port: port, envelopes: elements.compactMap { expected($0) }, location: member.keyLocation))
                }
            case "order":
                switch value.string {
                case "strict": testCase.ordered = true
                case "any": testCase.ordered = false
                default: problem("order must be strict or any", at: value)
                }
            case "sinks":
                for member in members(value, of: "sinks", known: value.members?.map(\.key) ?? []) {
                    guard PortReference(member.key) != nil else {
                        problems.append(Diagnostic("'\(member.key)' in sinks must be instance.port", at: member.keyLocation))
                        continue
                    }
                    guard let text = member.value.string, let behaviour = SinkBehaviour(rawValue: text) else {
                        let choices = SinkBehaviour.allCases.map(\.rawValue).joined(separator: ", ")
                        problem("sinks.\(member.key) must be one of \(choices)", at: member.value)
                        continue
                    }
                    testCase.sinks[member.key] = behaviour
                    testCase.keyLocations["sinks." + member.key] = member.keyLocation
                }
            case "services":
                for member in members(value, of: "services", known: value.members?.map(\.key) ?? []) {
                    testCase.services[member.key] = member.value.json
                    testCase.keyLocations["services." + member.key] = member.keyLocation
                }
            case "enable":
                testCase.enable = (value.elements ?? [value]).compactMap { string($0, "enable (iiidea ids)") }
            case "disable":
                testCase.disable = (value.elements ?? [value]).compactMap { string($0, "disable (iiidea ids)") }
            case "dead_letters":
                for member in members(value, of: "dead_letters", known: value.members?.map(\.key) ?? []) {
                    guard case .scalar(.int(let count)) = member.value.kind, count >= 0 else {
                        problem("dead_letters.\(member.key) must be a count", at: member.value)
                        continue
                    }
                    testCase.deadLetters.append((member.key, count, member.keyLocation))
                }
            case "timeout":
                guard let text = value.scalarText, let nanos = DurationText.nanoseconds(text), nanos > 0, nanos <= 600_000_000_000 else {
                    problem("timeout must be a duration of at most 10m, such as 5s", at: value)
                    continue
                }
                testCase.timeout = .nanoseconds(Int64(nanos))
            case "clock":
                guard let text = value.scalarText, let seconds = Self.unixSeconds(rfc3339: text) else {
                    problem("clock must be an RFC 3339 time such as 2026-01-01T08:00:00Z", at: value)
                    continue
                }
                testCase.clock = seconds
            default:
                break
            }
        }
        if node["expect"] == nil, node["dead_letters"] == nil {
            problem("test '\(name)' checks nothing: give it 'expect:' (or 'dead_letters:')", at: node)
        }
        return testCase
    }

    private mutating func input(_ node: ConfigNode) -> GraphTestCase.Input? {
        let fields = members(node, of: "an input", known: ["port", "type", "subject", "headers", "content_type", "body"])
        guard let portNode = node["port"] else {
            problem("an input needs 'port:', the source port it comes from", at: node)
            return nil
        }
        guard let port = port(portNode, "port") else { return nil }
        var input = GraphTestCase.Input(port: port, location: node.location)
        for (key, _, value) in fields {
            switch key {
            case "type": input.type = string(value, "type")
            case "subject": input.subject = string(value, "subject") ?? ""
            case "headers": input.headers = headers(value)
            case "content_type": input.contentType = string(value, "content_type") ?? input.contentType
            case "body": input.body = value.json
            default: break
            }
        }
        return input
    }

    private static let expectedKeys = ["type", "subject", "content_type", "headers", "body", "body_contains", "when", "refused"]

    private mutating func expected(_ node: ConfigNode) -> ExpectedEnvelope? {
        let fields = members(node, of: "an expected envelope", known: Self.expectedKeys)
        var expected = ExpectedEnvelope(location: node.location)
        for (key, _, value) in fields {
            switch key {
            case "type": expected.type = string(value, "type")
            case "subject": expected.subject = string(value, "subject")
            case "content_type": expected.contentType = string(value, "content_type")
            case "headers": expected.headers = headers(value)
            case "body": expected.body = value.json
            case "body_contains": expected.bodyContains = value.json
            case "refused":
                if case .scalar(.bool(true)) = value.kind { expected.refused = "" } else { expected.refused = string(value, "refused") }
            default:
                guard let source = string(value, "when") else { continue }
                do {
                    expected.condition = try Condition(parsing: source, at: value.location)
                } catch {
                    problems.append(error)
                }
            }
        }
        return node.members == nil ? nil : expected
    }
}

extension GraphTestParser {
    /// Seconds since the epoch of an RFC 3339 time, fractions included; nil when it is not one.
    static func unixSeconds(rfc3339 text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)?.timeIntervalSince1970
    }
}
