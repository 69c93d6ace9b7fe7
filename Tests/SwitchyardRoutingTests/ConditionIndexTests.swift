import SwitchyardCore
import SwitchyardRouting
import Testing

/// The condition index: every position whose condition holds is a candidate (the index may
/// keep more, never fewer), and the conditions it files are looked up, not evaluated.
struct ConditionIndexTests {
    /// Conditions the index files under a field, and some it cannot; by position.
    static let conditions: [String?] = [
        "body.k == 1", "body.k == \"1\"", "body.k in [2, 3, \"x\"]", "1 == body.k", "body.k == 1.5",
        "subject startsWith \"sensors/\"", "subject startsWith \"sensors/kitchen\"", "subject startsWith \"\"",
        "headers.mqtt.qos == 1 and body.k > 0", "body.k == null", "body.k == true", "body.k == \"é\"",
        "subject startsWith \"e\"", "body.k > 2", nil, "body.k in []", "not (body.k == 1)", "type == \"t\" or body.k == 1",
        "body.k in [-0.0]", "lower(body.s) == \"ab\"",
    ]

    static let bodies = [
        #"{"k": 1}"#, #"{"k": 1.0}"#, #"{"k": "1"}"#, #"{"k": "1.0"}"#, #"{"k": 3}"#, #"{"k": "x"}"#, #"{"k": 1.5}"#,
        #"{"k": null}"#, "{}", #"{"k": true}"#, #"{"k": [1]}"#, #"{"k": "é"}"#, #"{"k": "e\u0301"}"#, #"{"k": 0}"#,
        #"{"k": -0.0}"#, #"{"s": "AB"}"#, "not json",
    ]
    static let subjects = ["sensors/kitchen/temp", "sensors/hall", "e\u{301}x", "ex", "", "other"]

    @Test func everyConditionThatHoldsIsACandidate() throws {
        let parsed = try Self.conditions.map { try $0.map { try Condition(parsing: $0, at: nil) } }
        let index = ConditionIndex(conditions: parsed)
        var checked = 0
        for body in Self.bodies {
            for subject in Self.subjects {
                for qos in ["0", "1"] {
                    let envelope = Envelope(type: "t", subject: subject, headers: ["mqtt.qos": qos], body: Array(body.utf8))
                    var scope = EnvelopeScope(envelope)
                    let candidates = Set(index.candidates(for: &scope))
                    for (position, condition) in parsed.enumerated() {
                        var own = EnvelopeScope(envelope)
                        let holds = condition?.evaluate(&own) ?? true
                        #expect(
                            !holds || candidates.contains(position),
                            "\(Self.conditions[position] ?? "no condition") holds for \(body) / \(subject) but is no candidate")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == Self.bodies.count * Self.subjects.count * 2 * Self.conditions.count)
    }

    @Test func filedConditionsAreLookedUpAndTheRestAlwaysCandidates() throws {
        let parsed = try Self.conditions.map { try $0.map { try Condition(parsing: $0, at: nil) } }
        let index = ConditionIndex(conditions: parsed)
        // Not filed: `>`, no condition, `not`, `or`, a function of the field.
        #expect(index.indexedCount == Self.conditions.count - 5)
        var scope = EnvelopeScope(Envelope(type: "t", subject: "other", body: Array(#"{"k": 42}"#.utf8)))
        #expect(index.candidates(for: &scope) == [7, 13, 14, 16, 17, 19])
        var kitchen = EnvelopeScope(Envelope(type: "t", subject: "sensors/kitchen/x", body: Array(#"{"k": "1"}"#.utf8)))
        #expect(index.candidates(for: &kitchen) == [0, 1, 3, 5, 6, 7, 13, 14, 16, 17, 19])
    }

    /// 10,000 routes each waiting for its own value: an envelope finds its one route.
    @Test func tenThousandEqualityRoutesGiveOneCandidate() throws {
        let index = ConditionIndex(conditions: try (0..<10_000).map { try Condition(parsing: "body.k == \($0)", at: nil) })
        var scope = EnvelopeScope(Envelope(type: "t", body: Array(#"{"k": 4321}"#.utf8)))
        #expect(index.candidates(for: &scope) == [4321])
    }
}
