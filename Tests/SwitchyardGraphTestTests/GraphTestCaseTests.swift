import Testing

@testable import SwitchyardCore
@testable import SwitchyardGraphTest

/// Test files of `switchyard test`: what they read into, where their mistakes are, how
/// expectations compare JSON.
struct GraphTestCaseTests {
    @Test func aTestFileReadsIntoCasesWithTheirInputsAndExpectations() throws {
        let (parsed, problems) = GraphTestFile.parse(
            text: """
                routes: ../routes.yaml
                env: { TOKEN: abc }
                tests:
                  - name: one
                    order: any
                    timeout: 2s
                    sinks: { out.print: reject }
                    services: { kit.double: { doubled: 4 } }
                    enable: [a]
                    disable: b
                    input:
                      - { port: clock.tick, subject: s, headers: { h: v }, content_type: text/plain, body: hi }
                    expect:
                      out.print:
                        - { type: text, body: hi, headers: { h: v }, when: "body == 'hi'", refused: true }
                      log.write: []
                    dead_letters: { durable: 2 }
                """, path: "t.yaml")
        #expect(problems.isEmpty, "\(problems)")
        let file = try #require(parsed)
        #expect(file.routes == "../routes.yaml")
        #expect(file.environment == ["TOKEN": "abc"])
        let testCase = try #require(file.cases.first)
        #expect(testCase.name == "one")
        #expect(!testCase.ordered)
        #expect(testCase.timeout == .seconds(2))
        #expect(testCase.sinks == ["out.print": .reject])
        #expect(testCase.enable == ["a"] && testCase.disable == ["b"])
        #expect(testCase.inputs.first?.port.description == "clock.tick")
        #expect(testCase.inputs.first?.contentType == "text/plain")
        #expect(testCase.expectations.map(\.port.description) == ["out.print", "log.write"])
        let expected = try #require(testCase.expectations.first?.envelopes.first)
        #expect(expected.type == "text" && expected.body == .string("hi") && expected.refused == "")
        #expect(expected.condition?.source == "body == 'hi'")
        #expect(testCase.expectations.last?.envelopes.isEmpty == true)
        #expect(testCase.deadLetters.map(\.count) == [2])
    }

    @Test func everyMistakeNamesItsLineAndColumn() {
        let (parsed, problems) = GraphTestFile.parse(
            text: """
                tests:
                  - name: two
                    input:
                      - { body: 1 }
                    expect:
                      nodot: []
                      out.print: [ { when: "body ==" } ]
                    order: sideways
                  - input: []
                """, path: "t.yaml")
        #expect(parsed == nil)
        let text = problems.map(\.description)
        #expect(text.contains { $0.hasPrefix("t.yaml:4:9: error: an input needs 'port:'") }, "\(text)")
        #expect(text.contains { $0.hasPrefix("t.yaml:6:7: error: 'nodot' in expect must be instance.port") }, "\(text)")
        #expect(text.contains { $0.hasPrefix("t.yaml:7:36: error: expected a value") }, "at the condition's own place: \(text)")
        #expect(text.contains { $0.hasPrefix("t.yaml:8:12: error: order must be strict or any") }, "\(text)")
        #expect(text.contains { $0.hasPrefix("t.yaml:9:5: error: a test case needs a name") }, "\(text)")
    }

    @Test func expectationsCompareNumbersByValueAndContainmentRecursively() {
        let actual: JSONValue = ["a": .int(2), "b": ["c": .string("x"), "d": .bool(true)], "e": .array([.int(1), .int(2)])]
        #expect(JSONMatch.equal(["a": .double(2)], ["a": .int(2)]))
        #expect(JSONMatch.missing(["a": .double(2), "b": ["c": .string("x")]], in: actual, at: "body").isEmpty)
        #expect(JSONMatch.missing(["b": ["c": .string("y")]], in: actual, at: "body") == [#"body.b.c: expected "y", got "x""#])
        #expect(JSONMatch.missing(["z": .int(1)], in: actual, at: "body") == ["body.z: absent, expected 1"])
        #expect(JSONMatch.missing(["e": .array([.int(1)])], in: actual, at: "body") == ["body.e: expected [1], got [1,2]"])
    }
}
