import SwitchyardConfig
import SwitchyardCore
import SwitchyardSpool
import SwitchyardStore
import Testing

@testable import SwitchyardIiideas

/// `GraphConfig.applying`: the store's obtained iiideas and preference overrides merged into
/// the route files' configuration.
@Suite struct GraphConfigStoreTests {
    private static let routes = """
        iiideas:
          - id: written
            title: From the file
            trigger: { port: a.out }
            service: { piece: template, preferences: { text: "file" } }
            action:  { port: b.in, preferences: { level: low } }
        iiidea_templates:
          - id: tpl
            title: The template's title
            trigger: { port: a.out }
            service: { piece: template, preferences: { text: "template" } }
            action:  { port: b.in, preferences: { level: low } }
        """

    private static func config() throws -> GraphConfig {
        let (config, problems) = ConfigLoader(environment: [:]).load(sources: [(file: "s.yaml", text: routes)])
        try #require(problems.isEmpty, "\(problems)")
        return config
    }

    @Test func obtainedIiideasAreMadeFromTheirTemplatesWithTheirPreferences() throws {
        let config = try Self.config()
        let (merged, skipped) = config.applying(
            obtained: [
                ObtainedIiidea(id: "mine", template: "tpl", title: "Mine", preferences: PiecePreferences(service: ["text": "mine"])),
                ObtainedIiidea(id: "plain", template: "tpl", title: nil, preferences: PiecePreferences()),
            ],
            overrides: [:])
        #expect(skipped.isEmpty)
        #expect(merged.iiideas.map(\.id) == ["written", "mine", "plain"])
        let mine = merged.iiideas[1]
        #expect(mine.origin == .obtained(template: "tpl"))
        #expect(mine.title == "Mine")
        #expect(mine.servicePreferences?.json == ["text": "mine"])
        #expect(mine.actionPreferences?.json == ["level": "low"], "a piece without stored preferences keeps the template's")
        #expect(mine.servicePreferences?.location == GraphConfig.storeLocation(of: "mine"))
        #expect(GraphConfig.storedIiidea(at: mine.servicePreferences?.location) == "mine")
        #expect(!mine.hasPreferenceOverride, "an obtained iiidea's preferences are its own, not an override")
        let plain = merged.iiideas[2]
        #expect(plain.title == "The template's title")
        #expect(plain.servicePreferences?.json == ["text": "template"])
        #expect(merged.iiideas[0].origin == .routeFile)
        #expect(config.iiideas.count == 1, "the configuration itself is unchanged")
    }

    @Test func overridesReplaceARouteFileIiideasPreferencesPieceByPiece() throws {
        let (merged, skipped) = try Self.config().applying(
            obtained: [], overrides: ["written": PiecePreferences(action: ["level": "high"]), "nobody": PiecePreferences(service: [:])])
        #expect(skipped.isEmpty, "an override of an iiidea that is not there is ignored")
        let written = try #require(merged.iiideas.first)
        #expect(written.hasPreferenceOverride)
        #expect(written.actionPreferences?.json == ["level": "high"])
        #expect(written.servicePreferences?.json == ["text": "file"])
        #expect(written.servicePreferences?.location.file == "s.yaml")
        #expect(GraphConfig.storedIiidea(at: written.actionPreferences?.location) == "written")
        #expect(GraphConfig.storedIiidea(at: written.servicePreferences?.location) == nil)
        #expect(written.preferences == PiecePreferences(service: ["text": "file"], action: ["level": "high"]))
    }

    @Test func recordsThatCannotApplyAreLeftOutWithTheReason() throws {
        let (merged, skipped) = try Self.config().applying(
            obtained: [
                ObtainedIiidea(id: "orphan", template: "gone", title: nil, preferences: PiecePreferences()),
                ObtainedIiidea(id: "written", template: "tpl", title: nil, preferences: PiecePreferences()),
                ObtainedIiidea(id: "fine", template: "tpl", title: nil, preferences: PiecePreferences()),
            ],
            overrides: [:])
        #expect(merged.iiideas.map(\.id) == ["written", "fine"])
        #expect(merged.iiideas[0].origin == .routeFile)
        #expect(skipped.map(\.id) == ["orphan", "written"])
        #expect(skipped.first?.reason == "its template 'gone' is no longer in the route files")
        #expect(skipped.last?.reason.hasPrefix("its id is taken by the iiidea at s.yaml:2") == true, "\(skipped)")
    }

    @Test func thePieceFingerprintChangesWithThePreferences() throws {
        let config = try Self.config()
        let (merged, _) = config.applying(obtained: [], overrides: ["written": PiecePreferences(service: ["text": "other"])])
        let (same, _) = config.applying(obtained: [], overrides: ["written": PiecePreferences(service: ["text": "file"])])
        #expect(merged.iiideas[0].pieceFingerprint != config.iiideas[0].pieceFingerprint)
        #expect(
            same.iiideas[0].pieceFingerprint == config.iiideas[0].pieceFingerprint, "the same preferences from the store change nothing")
    }
}
