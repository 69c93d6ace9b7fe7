import Foundation
import SwitchyardCore
import SwitchyardSpool
import Testing

/// Plugin instances' durable state in the spool database: what the SQLite engine adds to the
/// contract both engines are held to (StoreIntegrationTests/PluginStateStoreTests).
@Suite("Spool state")
struct SpoolStateTests {
    private func temporaryPath() -> (path: String, directory: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-state-\(ULID.next())").path
        return (directory + "/spool.db", directory)
    }

    @Test("values are kept per instance and survive reopening; the file is owner-only")
    func putGetDeleteAcrossReopen() throws {
        let (path, directory) = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let spool = try Spool(path: path)
            try spool.store.setState(of: "a", key: Array("k".utf8), value: [1, 2, 3])
            try spool.store.setState(of: "b", key: Array("k".utf8), value: [9])
            try spool.store.setState(of: "a", key: Array("empty".utf8), value: [])
            try spool.store.setState(of: "a", key: Array("gone".utf8), value: [0])
            try spool.store.removeState(of: "a", key: Array("gone".utf8))
            try spool.store.removeState(of: "a", key: Array("never".utf8))
        }
        let spool = try Spool(path: path)
        #expect(try spool.store.stateValue(of: "a", key: Array("k".utf8)) == [1, 2, 3])
        #expect(try spool.store.stateValue(of: "b", key: Array("k".utf8)) == [9])
        #expect(try spool.store.stateValue(of: "a", key: Array("empty".utf8)) == [])
        #expect(try spool.store.stateValue(of: "a", key: Array("gone".utf8)) == nil)
        #expect(try spool.store.stateValue(of: "c", key: Array("k".utf8)) == nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600)
        let folder = try FileManager.default.attributesOfItem(atPath: directory)
        #expect((folder[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o700)
    }
}
