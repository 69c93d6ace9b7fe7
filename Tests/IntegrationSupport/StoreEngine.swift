import Foundation
import Logging
import SwitchyardPostgres
import SwitchyardSpool
import Testing

/// The two engines of the store, for tests that hold both to one contract: the SQLite spool
/// database, and a real PostgreSQL 15 server (``PostgresServer``).
enum StoreEngine: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }

    /// A fresh spool in a folder of its own and, for `.postgres`, a store on a fresh server;
    /// `cleanup` stops the server and removes the folder.
    func open() throws -> (spool: Spool, postgres: PostgresStore?, cleanup: () -> Void) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)").path
        let spool = try Spool(path: directory + "/spool.db")
        let removeFolder = { _ = try? FileManager.default.removeItem(atPath: directory) }
        guard self == .postgres else { return (spool, nil, removeFolder) }
        let server = try PostgresServer()
        let store = try PostgresStore(url: server.url, logger: Logger(label: "test"))
        return (
            spool, store,
            {
                withExtendedLifetime(store) { server.stop() }
                removeFolder()
            }
        )
    }
}
