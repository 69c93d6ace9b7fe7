import Foundation
import SwitchyardSpool
import Testing

@testable import SwitchyardRuntime

/// The host's state service (ABI version 2) through a real plugin: the testkit's
/// `state_check` runs put/get/scan/delete and the limits at start and writes the answers.
@Suite struct StateServiceTests {
    /// Starts and stops a router with one testkit instance named `instance` running the check;
    /// the check's answers. With `spool`, on that spool: one store the routers of a test reuse,
    /// as one process's routers would. A fresh claim per router could fail: the claim is an
    /// `flock` on an open file description, and a subprocess another test spawns at that moment
    /// holds a copy of the descriptor until it execs (`O_CLOEXEC` closes it only then), so the
    /// lock outlives the closed `Spool` for as long as that child takes to exec.
    private func runCheck(instance: String, directory: String, spool: Spool?) async throws -> [String: String] {
        let output = "\(directory)/check-\(UUID().uuidString).txt"
        let plan = try planWithTestKit(
            """
            \(spool != nil ? "spool: { path: \"\(directory)/state/spool.db\" }" : "")
            instances:
              \(instance): { plugin: testkit, state_check: { path: "\(output)" } }
            """)
        let router = Router(plan: plan, logger: quietLogger, spool: spool)
        try router.start()
        router.shutdown(drainTimeout: .seconds(5))
        return try #require(await answers(in: output))
    }

    @Test func putGetScanDeleteAndTheLimits() async throws {
        let directory = try temporaryDirectory("state")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let spool = try Spool(path: "\(directory)/state/spool.db", owner: true)
        let first = try await runCheck(instance: "stateA", directory: directory, spool: spool)
        #expect(first["persisted"] == "nil")
        #expect(first["put"] == "ok")
        #expect(first["get"] == "one")
        #expect(first["missing"] == "nil")
        #expect(first["scan"] == "a/1:one,a/2:two,a/3:")
        #expect(first["delete"] == "nil")
        #expect(first["long_key"]?.hasSuffix("the key or value is over the router's limit") == true)
        #expect(first["long_value"]?.hasSuffix("the key or value is over the router's limit") == true)
        #expect(first["largest_value"] == "1048576")
        let mode = try FileManager.default.attributesOfItem(atPath: "\(directory)/state/spool.db")[.posixPermissions] as? Int
        #expect(mode.map { $0 & 0o777 } == 0o600)

        // A restart finds what the first run stored; another instance name has its own keys.
        let second = try await runCheck(instance: "stateA", directory: directory, spool: spool)
        #expect(second["persisted"] == "run")
        let other = try await runCheck(instance: "stateB", directory: directory, spool: spool)
        #expect(other["persisted"] == "nil")
    }

    @Test func withoutAStoreEveryCallFails() async throws {
        let directory = try temporaryDirectory("nostate")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let answers = try await runCheck(instance: "stateNone", directory: directory, spool: nil)
        #expect(answers["persisted"]?.contains("the router's store failed (status 5)") == true)
        #expect(answers["put"]?.contains("the router's store failed (status 5)") == true)
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/state"))
    }
}
