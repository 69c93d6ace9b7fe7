import SwitchyardConfig
import SwitchyardCore
import Testing

@testable import SwitchyardRuntime

/// The `http` piece's settings as the graph validator reads them: `allow_private` and
/// `max_redirects`, with their defaults, and each bad value named.
struct HTTPPieceSettingsTests {
    /// The diagnostics of an iiidea whose http piece has `preferences`.
    static func diagnostics(_ preferences: String) throws -> (plan: GraphPlan?, messages: [String]) {
        let yaml = """
            instances:
              a: { plugin: fake }
            iiideas:
              - id: call
                trigger: { port: a.out }
                service: { piece: http, preferences: { \(preferences) } }
                action: { port: a.any }
            """
        let (config, problems) = ConfigLoader(environment: [:]).load(sources: [(file: "g.yaml", text: yaml)])
        try #require(problems.isEmpty, "\(problems)")
        let (plan, diagnostics) = GraphValidator(plugins: [try loadFakePlugin()]).validate(config)
        return (plan, diagnostics.map { $0.message })
    }

    @Test func theSettingsAreReadWithTheirDefaults() throws {
        let plain = try Self.diagnostics(#"url: "https://example.com/{{body.y}}""#)
        #expect(plain.messages.isEmpty)
        guard case .http(_, _, let policy, _)? = plain.plan?.iiideas.first?.service else {
            Issue.record("not an http piece: \(String(describing: plain.plan))")
            return
        }
        #expect(policy == HTTPPiecePolicy(allowPrivate: false, maximumRedirects: 0))
        let allowing = try Self.diagnostics(#"url: "http://10.0.0.1/", allow_private: true, max_redirects: 3"#)
        guard case .http(_, _, let lifted, _)? = allowing.plan?.iiideas.first?.service else {
            Issue.record("not an http piece: \(allowing.messages)")
            return
        }
        #expect(lifted == HTTPPiecePolicy(allowPrivate: true, maximumRedirects: 3))
    }

    @Test(arguments: [
        (#"url: "https://example.com/", allow_private: "yes""#, "preferences.allow_private must be true or false"),
        (#"url: "https://example.com/", max_redirects: 11"#, "preferences.max_redirects must be a whole number from 0 to 10"),
        (#"url: "https://example.com/", max_redirects: -1"#, "preferences.max_redirects must be a whole number from 0 to 10"),
    ])
    func badSettingsAreNamed(_ preferences: String, _ message: String) throws {
        let result = try Self.diagnostics(preferences)
        #expect(result.plan == nil)
        #expect(result.messages == [message])
    }
}
