import Foundation
import SwitchyardCore
import SwitchyardSpool
import Testing

/// Plugin instances' durable state in the spool database.
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
            try spool.setState(of: "a", key: Array("k".utf8), value: [1, 2, 3])
            try spool.setState(of: "b", key: Array("k".utf8), value: [9])
            try spool.setState(of: "a", key: Array("empty".utf8), value: [])
            try spool.setState(of: "a", key: Array("gone".utf8), value: [0])
            try spool.removeState(of: "a", key: Array("gone".utf8))
            try spool.removeState(of: "a", key: Array("never".utf8))
        }
        let spool = try Spool(path: path)
        #expect(try spool.stateValue(of: "a", key: Array("k".utf8)) == [1, 2, 3])
        #expect(try spool.stateValue(of: "b", key: Array("k".utf8)) == [9])
        #expect(try spool.stateValue(of: "a", key: Array("empty".utf8)) == [])
        #expect(try spool.stateValue(of: "a", key: Array("gone".utf8)) == nil)
        #expect(try spool.stateValue(of: "c", key: Array("k".utf8)) == nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600)
        let folder = try FileManager.default.attributesOfItem(atPath: directory)
        #expect((folder[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o700)
    }

    @Test("a scan pages through the keys with a prefix in byte order, also past 0xFF")
    func scanPages() throws {
        let (path, directory) = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool(path: path)
        let keys = (0..<150).map { Array("p/\(String(format: "%03d", $0))".utf8) }
        for key in keys.shuffled() { try spool.setState(of: "i", key: key, value: key) }
        try spool.setState(of: "i", key: Array("q/0".utf8), value: [])
        try spool.setState(of: "other", key: Array("p/x".utf8), value: [])
        try spool.setState(of: "i", key: [0x70, 0xFF, 0x01], value: [])
        try spool.setState(of: "i", key: [0x70, 0xFF, 0xFF], value: [])
        try spool.setState(of: "i", key: [0x71], value: [])

        var seen: [[UInt8]] = []
        var after: [UInt8]?
        while true {
            let page = try spool.stateEntries(of: "i", prefix: Array("p/".utf8), after: after)
            #expect(page.count <= Spool.stateScanPage)
            #expect(page.allSatisfy { $0.key == $0.value })
            seen += page.map(\.key)
            guard page.count == Spool.stateScanPage, let last = page.last else { break }
            after = last.key
        }
        #expect(seen == keys)
        #expect(
            try spool.stateEntries(of: "i", prefix: [0x70, 0xFF], after: nil).map(\.key) == [[0x70, 0xFF, 0x01], [0x70, 0xFF, 0xFF]])
        #expect(try spool.stateEntries(of: "i", prefix: [], after: nil, limit: 1000).count == 154)
    }
}
