import Foundation
import SwitchyardStore
import Testing

@testable import IntegrationSupport

/// The two engines of obtained iiideas and preference overrides, held to one contract.
@Suite(.timeLimit(.minutes(2)))
struct IiideaCatalogStoreTests {
    private static func open(_ engine: StoreEngine) throws -> (any IiideaCatalogStore & IiideaSwitchStore, cleanup: () -> Void) {
        let (spool, postgres, cleanup) = try engine.open()
        return (postgres ?? spool.store, cleanup)
    }

    @Test(arguments: StoreEngine.allCases)
    func obtainedIiideasAndOverridesAreKeptReplacedAndForgottenWithTheirSwitch(engine: StoreEngine) throws {
        let (store, cleanup) = try Self.open(engine)
        defer { cleanup() }
        let first = ObtainedIiidea(
            id: "a", template: "t", title: "A title",
            preferences: PiecePreferences(service: ["text": "hi {{body.n}}"], action: ["level": "high", "n": 2]), owner: "user-1")
        let second = ObtainedIiidea(id: "b", template: "t", title: nil, preferences: PiecePreferences())
        #expect(try store.addObtained(first))
        #expect(try !store.addObtained(ObtainedIiidea(id: "a", template: "other", title: nil, preferences: PiecePreferences())))
        try store.saveObtained(second)
        try store.setPreferenceOverride("file-one", to: PiecePreferences(service: ["text": "x"]))
        try store.setPreferenceOverride("file-two", to: PiecePreferences(action: ["to": "sip:a@b"]))
        try store.setPreferenceOverride("file-two", to: nil)
        try store.setIiideaSwitch("b", enabled: false)
        #expect(try store.obtainedIiideas() == [first, second])
        #expect(try store.preferenceOverrides() == ["file-one": PiecePreferences(service: ["text": "x"])])

        var changed = first
        changed.title = nil
        changed.preferences = PiecePreferences(action: ["level": "low"])
        try store.saveObtained(changed)
        #expect(try store.obtainedIiideas() == [changed, second], "saved in place, keeping its position")

        #expect(try store.iiideaSwitches()["b"] == false)
        #expect(try store.deleteObtained("b"))
        #expect(try !store.deleteObtained("b"), "already gone")
        #expect(try store.obtainedIiideas() == [changed])
        #expect(try store.iiideaSwitches()["b"] == nil, "its switch is forgotten with it")
    }
}
