import Foundation
import SwitchyardCore
import SwitchyardSpool
import Testing

/// The iiidea store's records in the spool database: obtained iiideas and preference overrides.
@Suite("Spool iiidea store")
struct SpoolIiideaStoreTests {
    private func temporaryPath() -> (path: String, directory: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-store-\(ULID.next())").path
        return (directory + "/spool.db", directory)
    }

    @Test("obtained iiideas and overrides survive reopening; saving again replaces; deleting forgets the switch too")
    func roundTrip() throws {
        let (path, directory) = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = ObtainedIiidea(
            id: "a", template: "t", title: "A title",
            preferences: PiecePreferences(service: ["text": "hi {{body.n}}"], action: ["level": "high", "n": 2]))
        let second = ObtainedIiidea(id: "b", template: "t", title: nil, preferences: PiecePreferences())
        do {
            let spool = try Spool(path: path)
            try spool.saveObtained(first)
            try spool.saveObtained(second)
            try spool.setPreferenceOverride("file-one", to: PiecePreferences(service: ["text": "x"]))
            try spool.setPreferenceOverride("file-two", to: PiecePreferences(action: ["to": "sip:a@b"]))
            try spool.setPreferenceOverride("file-two", to: nil)
            try spool.setIiidea("b", enabled: false)
        }
        let spool = try Spool(path: path)
        #expect(try spool.obtainedIiideas() == [first, second])
        #expect(try spool.preferenceOverrides() == ["file-one": PiecePreferences(service: ["text": "x"])])

        var changed = first
        changed.title = nil
        changed.preferences = PiecePreferences(action: ["level": "low"])
        try spool.saveObtained(changed)
        #expect(try spool.obtainedIiideas() == [changed, second], "saved in place, keeping its position")

        #expect(try spool.iiideaStates()["b"] == false)
        #expect(try spool.deleteObtained("b"))
        #expect(try !spool.deleteObtained("b"), "already gone")
        #expect(try spool.obtainedIiideas() == [changed])
        #expect(try spool.iiideaStates()["b"] == nil, "its switch is forgotten with it")
    }
}
