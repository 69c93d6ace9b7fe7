import SwitchyardConfig
import SwitchyardCore
import Testing

private func load(_ text: String) -> (GraphConfig, [Diagnostic]) {
    ConfigLoader(environment: [:]).load(sources: [(file: "r.yaml", text: text)])
}

/// `types:` holds only user-defined schemas: a plugin's own type language (Qeo's QDM) is the
/// plugin's business, through `describe`.
@Suite struct TypesSectionTests {
    @Test func aUserTypeIsKeptWithItsSchema() {
        let (config, diagnostics) = load("types:\n  - name: my.Reading\n    schema: { type: object, required: [value] }\n")
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(config.types.map(\.name) == ["my.Reading"])
        #expect(config.types.first?.schema["required"] == ["value"])
    }

    @Test func theOldQDMEntrySaysWhatToWriteInstead() {
        let (config, diagnostics) = load("types:\n  - qdm: [a.xml, b.xml]\n")
        #expect(config.types.isEmpty)
        #expect(diagnostics.count == 1)
        #expect(diagnostics.first?.message.contains("'qdm' belongs to the qeo instance") == true, "\(diagnostics)")
        #expect(diagnostics.first?.message.contains("qeo.org.qeo.sample.simplechat.ChatMessage") == true)
        #expect(diagnostics.first?.location == SourceLocation(file: "r.yaml", line: 2, column: 10))
    }

    @Test func aBadSchemaIsReportedAtTheKeywordItNames() {
        let (_, diagnostics) = load("types:\n  - name: t\n    schema:\n      type: object\n      properties: { a: { type: integr } }\n")
        #expect(diagnostics.count == 1, "\(diagnostics)")
        #expect(diagnostics.first?.location?.line == 5)
    }
}

/// Plugins point at a configuration value with a JSON Pointer (ABI section 6); the host maps it
/// to the route file.
@Suite struct ConfigNodePointerTests {
    static let text = """
        instances:
          home:
            plugin: qeo
            qdm: [first.xml, second.xml]
            listen: { port: 70000 }
            "a/b": { "c~d": 1 }
        """

    static func instance() throws -> ConfigNode {
        let (config, diagnostics) = load(text)
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        return try #require(config.instance(named: "home")).config
    }

    @Test func anElementOfAListIsFoundByItsIndex() throws {
        let node = try Self.instance()
        #expect(node.location(ofPointer: "/qdm/1") == SourceLocation(file: "r.yaml", line: 4, column: 22))
        #expect(node.location(ofPointer: "/qdm") == SourceLocation(file: "r.yaml", line: 4, column: 5))
    }

    @Test func aNestedKeyIsFoundAtItsKey() throws {
        let node = try Self.instance()
        #expect(node.location(ofPointer: "/listen/port") == SourceLocation(file: "r.yaml", line: 5, column: 15))
        #expect(node.location(ofPointer: "/a~1b/c~0d") == SourceLocation(file: "r.yaml", line: 6, column: 14))
    }

    @Test func aPointerThatGoesNowhereStopsAtTheDeepestValueOnItsWay() throws {
        let node = try Self.instance()
        #expect(node.location(ofPointer: "/qdm/7") == SourceLocation(file: "r.yaml", line: 4, column: 5))
        #expect(node.location(ofPointer: "/listen/port/deeper") == SourceLocation(file: "r.yaml", line: 5, column: 15))
        #expect(node.location(ofPointer: "/nothing") == node.location)
        #expect(node.location(ofPointer: "") == node.location)
    }

    @Test func onlyAMessageThatStartsWithAPointerHasOne() {
        #expect(ConfigNode.pointerPrefix(of: "/qdm/0: no such file")?.pointer == "/qdm/0")
        #expect(ConfigNode.pointerPrefix(of: "/qdm/0: no such file")?.rest == "no such file")
        #expect(ConfigNode.pointerPrefix(of: "qdm: no such file") == nil)
        #expect(ConfigNode.pointerPrefix(of: "/etc/x is missing: really") == nil)
        #expect(ConfigNode.pointerPrefix(of: "/qdm without a colon") == nil)
    }
}
