import Foundation
import Logging
import SwitchyardPostgres
import SwitchyardSpool
import SwitchyardStore
import Testing

@testable import IntegrationSupport

/// The two engines of plugin state, held to one contract: the SQLite spool database and a
/// real PostgreSQL 15 server.
@Suite(.timeLimit(.minutes(2)))
struct PluginStateStoreTests {
    /// A fresh store of `engine`, with what must outlive the test (the server, the folder).
    private static func open(_ engine: StoreEngine) throws -> (any PluginStateStore, cleanup: () -> Void) {
        let (spool, postgres, cleanup) = try engine.open()
        return (postgres ?? spool.store, cleanup)
    }

    @Test(arguments: StoreEngine.allCases)
    func valuesAreKeptPerInstanceAndRemoved(engine: StoreEngine) throws {
        let (store, cleanup) = try Self.open(engine)
        defer { cleanup() }
        try store.setState(of: "a", key: Array("k".utf8), value: [1, 2, 3])
        try store.setState(of: "b", key: Array("k".utf8), value: [9])
        try store.setState(of: "a", key: Array("empty".utf8), value: [])
        try store.setState(of: "a", key: Array("gone".utf8), value: [0])
        try store.setState(of: "a", key: Array("k".utf8), value: [4, 5])
        try store.removeState(of: "a", key: Array("gone".utf8))
        try store.removeState(of: "a", key: Array("never".utf8))
        #expect(try store.stateValue(of: "a", key: Array("k".utf8)) == [4, 5])
        #expect(try store.stateValue(of: "b", key: Array("k".utf8)) == [9])
        #expect(try store.stateValue(of: "a", key: Array("empty".utf8)) == [])
        #expect(try store.stateValue(of: "a", key: Array("gone".utf8)) == nil)
        #expect(try store.stateValue(of: "c", key: Array("k".utf8)) == nil)
        // Bytes are bytes: NUL, 0xFF and invalid UTF-8 round-trip in keys and values.
        let odd: [UInt8] = [0, 0xFF, 0xC3, 0x28, 0]
        try store.setState(of: "a", key: odd, value: odd.reversed())
        #expect(try store.stateValue(of: "a", key: odd) == odd.reversed())
        let largest = [UInt8](repeating: 7, count: PluginStateLimits.maximumValue)
        try store.setState(of: "a", key: [UInt8](repeating: 0x6B, count: PluginStateLimits.maximumKey), value: largest)
        #expect(try store.stateValue(of: "a", key: [UInt8](repeating: 0x6B, count: PluginStateLimits.maximumKey)) == largest)
    }

    @Test(arguments: StoreEngine.allCases)
    func aScanPagesThroughAPrefixInByteOrderAlsoPast0xFF(engine: StoreEngine) throws {
        let (store, cleanup) = try Self.open(engine)
        defer { cleanup() }
        let keys = (0..<150).map { Array("p/\(String(format: "%03d", $0))".utf8) }
        for key in keys.shuffled() { try store.setState(of: "i", key: key, value: key) }
        try store.setState(of: "i", key: Array("q/0".utf8), value: [])
        try store.setState(of: "other", key: Array("p/x".utf8), value: [])
        try store.setState(of: "i", key: [0x70, 0xFF, 0x01], value: [])
        try store.setState(of: "i", key: [0x70, 0xFF, 0xFF], value: [])
        try store.setState(of: "i", key: [0x71], value: [])

        var seen: [[UInt8]] = []
        var after: [UInt8]?
        while true {
            let page = try store.stateEntries(of: "i", prefix: Array("p/".utf8), after: after, limit: PluginStateLimits.scanPage)
            #expect(page.count <= PluginStateLimits.scanPage)
            #expect(page.allSatisfy { $0.key == $0.value })
            seen += page.map(\.key)
            guard page.count == PluginStateLimits.scanPage, let last = page.last else { break }
            after = last.key
        }
        #expect(seen == keys)
        #expect(
            try store.stateEntries(of: "i", prefix: [0x70, 0xFF], after: nil, limit: 64).map(\.key) == [
                [0x70, 0xFF, 0x01], [0x70, 0xFF, 0xFF],
            ])
        #expect(try store.stateEntries(of: "i", prefix: [], after: nil, limit: 1000).count == 154)
    }

    /// A dropped connection (the server ended it) costs no call: the next one reconnects.
    @Test func aDroppedConnectionIsOpenedAgain() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let store = try PostgresStore(url: server.url, logger: Logger(label: "test"))
        try store.setState(of: "a", key: [1], value: [2])
        let ended = try server.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'switchyard'")
        #expect(ended == "1")
        #expect(try store.stateValue(of: "a", key: [1]) == [2])
    }

    /// Errors name the database and never its password.
    @Test func aWrongPasswordIsRefusedWithoutShowingIt() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let wrong = server.url.replacingOccurrences(of: server.password, with: "not-the-password")
        let error = try #require(throws: StoreError.self) { try PostgresStore(url: wrong, logger: Logger(label: "test")) }
        #expect(error.description.contains("postgres://switchyard:***@127.0.0.1:\(server.port)/switchyard"), "\(error)")
        #expect(error.description.contains("password authentication failed"), "\(error)")
        #expect(!error.description.contains("not-the-password"))
    }
}
