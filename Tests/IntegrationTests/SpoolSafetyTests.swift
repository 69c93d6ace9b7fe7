import Foundation
import Testing

@testable import IntegrationSupport

/// The spool under faults: a full file system, a second router, a damaged file; and the modes
/// of the files it creates.
@Suite(.timeLimit(.minutes(3)))
struct SpoolSafetyTests {
    private static func routes(_ sandbox: Sandbox, count: Int, spool: String) -> String {
        """
        spool: { path: "\(spool)" }
        instances:
          source: { plugin: testkit, numbers: { count: \(count), subjects: 4, state: "\(sandbox.path("source.state"))" } }
          sink:   { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))" } }
          clock:  { plugin: core, timer: { interval: 20ms } }
          ticks:  { plugin: core, file: { path: "\(sandbox.path("ticks.jsonl"))" } }
        routes:
          - name: durable
            from: source.numbers
            to: sink.collect
            delivery: at-least-once
            dedupe: 10m
          - name: other
            from: clock.tick
            to: ticks.write
        """
    }

    private static func run(_ sandbox: Sandbox) throws -> RouterProcess {
        try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
    }

    @Test func aFullFileSystemPausesTheRouteAndLosesNothing() async throws {
        let sandbox = try Sandbox(plugins: ["testkit", "core"])
        let disk = try SmallFileSystem(at: sandbox.path("disk"), megabytes: 8)
        let total = 6000
        try sandbox.writeRoutes(Self.routes(sandbox, count: total, spool: disk.path + "/spool.db"))
        // Leave too little room for the stream's write-ahead log.
        try disk.fill(leavingKilobytes: 256)
        let router = try Self.run(sandbox)
        await router.waitUntil("the route paused on a full spool") { router.standardError.contains("route paused: the spool cannot write") }
        #expect(router.logged("No space left") || router.standardError.contains("full"), "\(router.standardError)")
        let collectedWhileFull = sandbox.lines(of: "collected.txt").count
        #expect(collectedWhileFull < total)
        // The other route runs on — for 100 ticks (2 s), so the durable route's once-a-second
        // check for replayed dead letters runs while the spool cannot delete what its sink
        // acknowledged (it once read those rows back and delivered them again).
        let ticks = sandbox.lines(of: "ticks.jsonl").count
        await router.waitUntil("the timer route still delivers") { sandbox.lines(of: "ticks.jsonl").count > ticks + 100 }

        try disk.freeFiller()
        await router.waitUntil("the route resumed") { router.standardError.contains("route resumed: the spool writes again") }
        await router.waitUntil("every envelope collected", timeout: .seconds(90)) { Set(sandbox.lines(of: "collected.txt")).count >= total }
        #expect(router.stop() == 0)
        let lines = sandbox.lines(of: "collected.txt")
        let numbers = Set(lines.compactMap { $0.split(separator: " ").first.flatMap { Int($0.dropFirst(2)) } })
        #expect(numbers == Set(1...total), "missing: \(Set(1...total).subtracting(numbers).sorted().prefix(10))")
        // At least once: nothing lost. Duplicates are allowed — one CI run of a loaded machine
        // (stop 34) delivered 436 of 6,000 twice; alone this run has none. Its cause is not
        // known yet (not the rereading of undeleted rows, which SpooledDelivery now avoids).
        #expect(lines.count >= total)
    }

    /// The issue's case: MQTT → at-least-once → MQTT while the spool's file system is full.
    /// Before, most of 3,000 QoS 1 messages were confirmed to the broker and lost.
    @Test func mqttToMQTTThroughAFullSpoolLosesNothing() async throws {
        let brokerA = try Mosquitto()
        let brokerB = try Mosquitto()
        let sandbox = try Sandbox(plugins: ["mqtt"])
        let disk = try SmallFileSystem(at: sandbox.path("disk"), megabytes: 8)
        try sandbox.writeRoutes(
            """
            spool: { path: "\(disk.path)/spool.db" }
            instances:
              a: { plugin: mqtt, url: "\(brokerA.url)", client_id: full-a, subscriptions: [ { topic: "chat/#", qos: 1 } ] }
              b: { plugin: mqtt, url: "\(brokerB.url)", client_id: full-b, publish: { qos: 1 } }
            routes:
              - name: durable
                from: a.messages
                to: b.publish
                delivery: at-least-once
                dedupe: 10m
            """
        )
        let watch = try MosquittoSubscriber(brokerB, topic: "chat/#", qos: 1)
        try disk.fill(leavingKilobytes: 192)
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("the router subscribed") { brokerA.occurrences(of: "Sending SUBACK to full-a") > 0 }
        let total = 3000
        let messages = sandbox.path("messages.txt")
        try (1...total).map { "message \($0) " + String(repeating: "x", count: 100) }.joined(separator: "\n").write(
            toFile: messages, atomically: true, encoding: .utf8)
        let published = try Tool.run(
            "/bin/sh",
            ["-c", "/usr/bin/mosquitto_pub \(brokerA.clientArguments().joined(separator: " ")) -t chat/n -q 1 -l < \(messages)"],
            timeout: .seconds(60))
        #expect(published.status == 0, "\(published.output)")
        await router.waitUntil("the route paused on a full spool") { router.standardError.contains("route paused: the spool cannot write") }
        #expect(!router.standardError.contains("confirmed to the broker anyway"))
        try disk.freeFiller()
        await router.waitUntil("every message on broker B", timeout: .seconds(90)) { Set(watch.lines).count >= total }
        #expect(router.stop() == 0)
        let received = Set(watch.lines.compactMap { $0.split(separator: " ").dropFirst(2).first.flatMap { Int($0) } })
        #expect(received == Set(1...total), "missing: \(Set(1...total).subtracting(received).sorted().prefix(10))")
    }

    @Test func aSecondRouterOnTheSameSpoolIsRefused() async throws {
        let sandbox = try Sandbox(plugins: ["testkit", "core"])
        try sandbox.writeRoutes(Self.routes(sandbox, count: 1_000_000, spool: sandbox.path("state/spool.db")))
        let first = try Self.run(sandbox)
        await first.waitUntil("the first router delivers") { !sandbox.lines(of: "collected.txt").isEmpty }
        let second = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(second.status == 1)
        #expect(second.errors.contains("is in use by another router (pid "), "\(second.errors)")
        #expect(second.errors.contains(sandbox.path("state/spool.db")))
        #expect(first.stop() == 0)
    }

    @Test func stateFilesAreTheOwnersOnly() async throws {
        let sandbox = try Sandbox(plugins: ["testkit", "core"])
        try sandbox.writeRoutes(Self.routes(sandbox, count: 10, spool: sandbox.path("state/deeper/spool.db")))
        let router = try Self.run(sandbox)
        await router.waitUntil("10 envelopes collected") { sandbox.lines(of: "collected.txt").count >= 10 }
        for (file, mode) in [
            ("state", 0o700), ("state/deeper", 0o700), ("state/deeper/spool.db", 0o600), ("state/deeper/spool.db-wal", 0o600),
        ] {
            let attributes = try FileManager.default.attributesOfItem(atPath: sandbox.path(file))
            #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == mode, "\(file)")
        }
        #expect(router.stop() == 0)
    }

    @Test func aDamagedSpoolIsRefusedUntilMovedAside() async throws {
        let sandbox = try Sandbox(plugins: ["testkit", "core"])
        let spool = sandbox.path("spool.db")
        try sandbox.writeRoutes(Self.routes(sandbox, count: 10, spool: spool))
        // A file that is not a database where the spool should be: never silently replaced.
        let garbage = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) })
        try garbage.write(to: URL(fileURLWithPath: spool))
        let refused = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(refused.status == 1)
        #expect(refused.errors.contains("spool '\(spool)' is damaged"), "\(refused.errors)")
        #expect(refused.errors.contains("switchyard spool recover \(spool)"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: spool)) == garbage)

        let recovered = try RouterProcess.runToExit(["spool", "recover", spool], in: sandbox.root)
        #expect(recovered.status == 0, "\(recovered.errors)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: sandbox.root.path).filter { $0.hasPrefix("spool.db.damaged-") }
        #expect(aside.count == 1)
        let router = try Self.run(sandbox)
        await router.waitUntil("10 envelopes collected on a new spool") { sandbox.lines(of: "collected.txt").count >= 10 }
        #expect(router.stop() == 0)

        // A sound spool is refused unless forced; a missing one is refused, and nothing is made.
        let sound = try RouterProcess.runToExit(["spool", "recover", spool], in: sandbox.root)
        #expect(sound.status == 1)
        #expect(sound.errors.contains("spool '\(spool)' is not damaged (its integrity check passes)"), "\(sound.errors)")
        let forced = try RouterProcess.runToExit(["spool", "recover", spool, "--force"], in: sandbox.root)
        #expect(forced.status == 0, "\(forced.errors)")
        let missing = try RouterProcess.runToExit(["spool", "recover", sandbox.path("nowhere.db")], in: sandbox.root)
        #expect(missing.status == 1)
        #expect(missing.errors.contains("there is no spool here, so nothing to recover"), "\(missing.errors)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("nowhere.db.lock")))
    }
}

/// `dlq` and `spool` commands find the spool as `run` does and never create one.
@Suite(.timeLimit(.minutes(1)))
struct SpoolLocationTests {
    @Test func aMissingSpoolIsRefusedWithItsOriginAndNothingIsCreated() throws {
        let sandbox = try Sandbox()
        let empty = try RouterProcess.runToExit(["dlq", "list"], in: sandbox.root)
        #expect(empty.status == 1)
        #expect(empty.errors.contains("there is no spool at 'state/spool.db' (from the default)"), "\(empty.errors)")
        let mistyped = try RouterProcess.runToExit(["dlq", "list", "--spool", "typo/spool.db"], in: sandbox.root)
        #expect(mistyped.status == 1)
        #expect(mistyped.errors.contains("'typo/spool.db' (from --spool)"), "\(mistyped.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.root.path).sorted() == ["plugins", "routes"])
    }

    @Test func theRouteFilesSpoolPathIsTheSpool() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            spool: { path: var/spool.db }
            instances:
              source: { plugin: testkit, numbers: { count: 3, state: "\(sandbox.path("source.state"))" } }
              sink:   { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", reject: true } }
            routes:
              - { name: durable, from: source.numbers, to: sink.collect, delivery: at-least-once }
            """)
        let router = try RouterProcess(["run", "routes", "--plugins", sandbox.plugins.path], in: sandbox.root)
        await router.waitUntil("3 dead letters") { router.occurrences(of: "delivery given up, moved to the dead letters") == 3 }
        #expect(router.stop() == 0)
        // From another folder: the route folder's spool.path, taken from the route file's folder.
        let listed = try RouterProcess.runToExit(["dlq", "list", "--routes", sandbox.routes.path], in: URL(fileURLWithPath: "/"))
        #expect(listed.status == 0, "\(listed.errors)")
        #expect(listed.output.split(separator: "\n").count == 3, "\(listed.output)")
        #expect(FileManager.default.fileExists(atPath: sandbox.routes.appendingPathComponent("var/spool.db").path))
    }
}
