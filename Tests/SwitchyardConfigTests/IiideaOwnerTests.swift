import SwitchyardConfig
import SwitchyardCore
import Testing

/// `owner:` on iiideas: a user or device id, nothing a condition could misread; templates have none.
@Suite struct IiideaOwnerTests {
    private func load(_ text: String) -> (GraphConfig, [Diagnostic]) {
        ConfigLoader(environment: [:]).load(sources: [(file: "t.yaml", text: text)])
    }

    @Test func anOwnerIsKeptAndAnUnsafeOneIsRefusedAtItsPosition() {
        let (config, diagnostics) = load(
            """
            iiideas:
              - { id: mine, owner: "alice@example.org", trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d } }
              - { id: theirs, owner: 'x" or true or "', trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d } }
              - { id: nobodys, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d } }
            iiidea_templates:
              - { id: shared, owner: bob, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d } }
            """)
        #expect(config.iiideas.map(\.id) == ["mine", "nobodys"])
        #expect(config.iiideas.map(\.owner) == ["alice@example.org", nil])
        #expect(
            diagnostics.contains {
                $0.message.hasPrefix("'owner' must be a user or device id") && $0.location?.line == 3
            }, "\(diagnostics)")
        #expect(diagnostics.contains { $0.message.hasPrefix("unknown key 'owner' in iiidea template") }, "\(diagnostics)")
        #expect(IiideaDeclaration.isOwner(String(repeating: "a", count: 128)))
        #expect(!IiideaDeclaration.isOwner(String(repeating: "a", count: 129)))
        #expect(!IiideaDeclaration.isOwner(""))
    }
}
