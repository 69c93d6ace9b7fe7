import Foundation
import Testing

@testable import IntegrationSupport

/// How the qeo plugin reports the ways a Qeo state instance goes (issue 40), against an
/// independent secured peer: `Tests/IntegrationTests/Support/qeo_state_peer.c`, plain C on
/// Cyclone DDS with the types from Cyclone's own `idlc` (`Support/ChatParticipant.idl` beside
/// it), compiled in the test's sandbox and joining the realm with its own device's credentials. The router's qeo instance reads the
/// ChatParticipant state topic and watches it for the wake feed; its `changes`, `wakes` and
/// `states` ports go to files, and the feed is fetched as a member's app fetches it
/// (`GET /wake/changes`, the peer's device certificate as the TLS client certificate).
///
/// Each removal — write then `dds_writedispose`, write then `dds_dispose`, write then
/// `dds_unregister_instance`, write then the writer leaving — must come out as the update, then
/// one `qeo.Removed` `{type, key}` (never the disposing sample's value), a wake with
/// `removed: true`, and the feed's entry for the key coalesced to `removed: true, value: null`.
/// What Cyclone 0.10.2's reader sees (a C reader with the same QoS, by hand):
///
/// | peer does                                   | last sample's instance state | valid data |
/// |---------------------------------------------|------------------------------|------------|
/// | `writedispose`                              | NOT_ALIVE_DISPOSED           | yes (the value written with it) |
/// | `dispose`                                   | NOT_ALIVE_DISPOSED           | no         |
/// | `unregister` (autodispose, DDS's default)   | NOT_ALIVE_DISPOSED           | no         |
/// | `unregister`, `--keep-unregistered`         | NOT_ALIVE_NO_WRITERS (the writer still lives; it was the instance's only writer) | no |
/// | the participant leaves (autodispose)        | NOT_ALIVE_DISPOSED           | no         |
/// | the participant leaves, `--keep-unregistered` | NOT_ALIVE_NO_WRITERS       | no         |
///
/// The tests wait for each event (the peer's `matched` and `ok …` lines, the files' envelopes),
/// never for time: the update must be through before the removal is sent, or the reader's
/// keep-last-1 history holds only the removal (the router then reports nothing for an instance
/// it never saw).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct QeoRemovalTests {
    static let topic = "org.qeo.sample.simplechat.ChatParticipant"
    static let participantType = "qeo.org.qeo.sample.simplechat.ChatParticipant"
    static let support = BuildProducts.packageRoot.appendingPathComponent("Tests/IntegrationTests/Support")

    /// `idlc -t` on ChatParticipant.idl and `cc` on qeo_state_peer.c, in `sandbox`; returns the
    /// executable. (The recipe at the top of qeo_state_peer.c.)
    static func buildPeer(in sandbox: Sandbox) throws -> URL {
        let directory = sandbox.root.appendingPathComponent("peer", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let idl = support.appendingPathComponent("ChatParticipant.idl").path
        let generated = try Tool.run("/usr/bin/idlc", ["-t", "-o", directory.path, idl], timeout: .seconds(60))
        guard generated.status == 0 else {
            throw SandboxError("idlc -t -o \(directory.path) \(idl) failed (\(generated.status)):\n\(generated.output)")
        }
        let executable = directory.appendingPathComponent("qeo_state_peer")
        let arguments = [
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-I", directory.path, "-o", executable.path,
            support.appendingPathComponent("qeo_state_peer.c").path, directory.appendingPathComponent("ChatParticipant.c").path,
            "-lddsc", "-pthread",
        ]
        let compiled = try Tool.run("/usr/bin/cc", arguments, timeout: .seconds(120))
        guard compiled.status == 0 else {
            throw SandboxError("cc \(arguments.joined(separator: " ")) failed (\(compiled.status)):\n\(compiled.output)")
        }
        return executable
    }

    /// The C peer as a child process: its standard input a socket (a write after it exited
    /// fails quietly instead of raising SIGPIPE), its output collected; killed on deinit.
    final class StatePeer {
        let process = Process()
        private let input = StandardInputSocket()
        private let output = Pipe()
        private let errors = Pipe()
        private let stdoutBuffer = OutputBuffer()
        private let stderrBuffer = OutputBuffer()
        private var readers: [PipeReader] = []

        /// Starts `executable arguments` with the tests' loopback-only Cyclone configuration.
        init(_ executable: URL, arguments: [String]) throws {
            process.executableURL = executable
            process.arguments = arguments
            var environment = ProcessInfo.processInfo.environment
            environment["CYCLONEDDS_URI"] = QeoTests.loopback
            process.environment = environment
            process.standardInput = input.childEnd
            process.standardOutput = output
            process.standardError = errors
            readers = [PipeReader(output, into: stdoutBuffer), PipeReader(errors, into: stderrBuffer)]
            try ChildProcess.start(process)
        }

        /// Its standard output so far, a line each (`matched`, `ok write alice BUSY`, …).
        var lines: [String] { stdoutBuffer.text.split(separator: "\n").map(String.init) }
        /// Its standard error so far (its errors, Cyclone's log lines).
        var standardError: String { stderrBuffer.text }

        /// Sends one command line.
        func send(_ command: String) { input.write(command + "\n") }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            for reader in readers { reader.stop() }
        }
    }

    /// A realm (user 1 `alice`, device 1 the router's, device 2 the peer's), the router serving
    /// it with the wake feed on, and the peer built.
    struct Scene {
        let authorities: Sandbox
        let home: String
        let peerCredentials: String
        let peerExecutable: URL
        let routerSandbox: Sandbox
        let router: RouterProcess
        /// The enrollment endpoint, which serves `/wake/changes`.
        let url: String
    }

    static func scene(domain: Int) async throws -> Scene {
        let (authorities, home) = try QeoEnrollmentTests.realm(domain: domain)
        let peerCredentials = try QeoRealmTests.realm(["add-device", home, "peer", "--user", "1"], in: authorities)
        let executable = try buildPeer(in: authorities)
        let (routerSandbox, router, endpoints) = try await QeoEnrollmentTests.authorityRouter(
            home: home, wake: topic, read: [topic], qdm: [QeoEnrollmentTests.participant],
            extraInstances: """
                  changes: { plugin: core, file: { path: "\(authorities.path("changes.jsonl"))" } }
                  wakes: { plugin: core, file: { path: "\(authorities.path("wakes.jsonl"))" } }
                  states: { plugin: core, file: { path: "\(authorities.path("states.jsonl"))" } }
                """,
            extraRoutes: """
                  - { from: realm.changes, to: changes.write }
                  - { from: realm.wakes, to: wakes.write }
                  - { from: realm.states, to: states.write }
                """)
        await router.waitUntil("joined the secured domain") { router.standardError.contains("joined domain \(domain) as") }
        return Scene(
            authorities: authorities, home: home, peerCredentials: peerCredentials, peerExecutable: executable,
            routerSandbox: routerSandbox, router: router, url: String(endpoints.split(separator: "|")[1]))
    }

    /// The envelopes of one of the scene's files so far (a line still being written is left out).
    static func envelopes(_ scene: Scene, _ file: String) -> [[String: Any]] {
        scene.authorities.lines(of: file).compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    static func body(_ envelope: [String: Any]?) -> [String: Any] { envelope?["body"] as? [String: Any] ?? [:] }
    static func headers(_ envelope: [String: Any]?) -> [String: String] { envelope?["headers"] as? [String: String] ?? [:] }

    /// The name an envelope of `changes` is about: an update's `name`, a removal's `key.name`.
    static func name(_ envelope: [String: Any]) -> String {
        body(envelope)["name"] as? String ?? (body(envelope)["key"] as? [String: String])?["name"] ?? ""
    }

    /// The peer's user's wake feed after `cursor`, fetched with the peer's device certificate.
    static func feed(_ scene: Scene, since cursor: Int) throws -> (page: [String: Any], changes: [[String: Any]]) {
        let answer = try QeoEnrollmentTests.device(["changes", scene.url, scene.peerCredentials, String(cursor)], in: scene.authorities)
        #expect(answer.status == 200, "\(answer.body)")
        return (answer.body, answer.body["changes"] as? [[String: Any]] ?? [])
    }

    /// Once the peer's writer is matched with the router's reader (after the DDS Security
    /// handshake), it writes alice BUSY: one update on `changes`, one wake, alice's value in the
    /// feed. Returns the update's `qeo.instance` and the wake's cursor.
    static func writeAlice(_ scene: Scene, _ peer: StatePeer) async throws -> (instance: String, cursor: Int) {
        await scene.router.waitUntil("the peer matched with the router's reader", timeout: .seconds(30)) {
            peer.lines.contains("matched")
        }
        peer.send("write alice BUSY")
        await scene.router.waitUntil("alice's update and its wake") {
            peer.lines.contains("ok write alice BUSY") && envelopes(scene, "changes.jsonl").count >= 1
                && envelopes(scene, "wakes.jsonl").count >= 1
        }
        let update = try #require(envelopes(scene, "changes.jsonl").first)
        #expect(update["type"] as? String == participantType, "\(update)")
        #expect(update["subject"] as? String == topic)
        #expect(body(update) as? [String: String] == ["name": "alice", "state": "BUSY"], "\(update)")
        #expect(headers(update)["qeo.type"] == topic)
        let instance = try #require(headers(update)["qeo.instance"], "\(update)")

        let wake = try #require(envelopes(scene, "wakes.jsonl").first)
        #expect(wake["type"] as? String == "qeo.Wake")
        #expect(wake["subject"] as? String == "1")
        #expect(body(wake)["user"] as? String == "1")
        #expect(body(wake)["topic"] as? String == topic)
        #expect(body(wake)["removed"] as? Bool == false, "\(wake)")
        let cursor = try #require(body(wake)["cursor"] as? Int, "\(wake)")

        let (page, changes) = try feed(scene, since: 0)
        #expect(changes.count == 1, "\(changes)")
        let entry = try #require(changes.first)
        #expect(entry["topic"] as? String == topic)
        #expect(entry["key"] as? [String: String] == ["name": "alice"])
        #expect(entry["value"] as? [String: String] == ["name": "alice", "state": "BUSY"], "\(entry)")
        #expect(entry["removed"] as? Bool == false)
        #expect(entry["cursor"] as? Int == cursor)
        #expect(page["user"] as? String == "1")
        #expect(page["reset"] as? Bool == false)
        return (instance, cursor)
    }

    /// After the removal: a `qeo.Removed` `{type, key}` of alice's instance on `changes`, a
    /// wake with `removed: true`, the feed's entry for alice coalesced to `removed: true, value:
    /// null` (whether fetched from the update's cursor or from the start), and an empty state set.
    static func expectAliceRemoved(_ scene: Scene, instance: String, after cursor: Int, _ how: String) async throws {
        await scene.router.waitUntil("alice's removal (\(how)) and its wake") {
            envelopes(scene, "changes.jsonl").count >= 2 && envelopes(scene, "wakes.jsonl").count >= 2
        }
        let changes = envelopes(scene, "changes.jsonl")
        let removal = try #require(changes.dropFirst().first)
        #expect(removal["type"] as? String == "qeo.Removed", "\(how) taken for an update: \(changes)")
        #expect(removal["subject"] as? String == topic)
        #expect(body(removal)["type"] as? String == topic, "\(removal)")
        #expect(body(removal)["key"] as? [String: String] == ["name": "alice"], "\(removal)")
        #expect(Set(body(removal).keys) == ["type", "key"], "a removal reports no value: \(removal)")
        #expect(headers(removal)["qeo.instance"] == instance)
        #expect(headers(removal)["qeo.type"] == topic)

        let wake = try #require(envelopes(scene, "wakes.jsonl").dropFirst().first)
        #expect(wake["type"] as? String == "qeo.Wake")
        #expect(body(wake)["user"] as? String == "1")
        #expect(body(wake)["topic"] as? String == topic)
        #expect(body(wake)["removed"] as? Bool == true, "\(how): \(wake)")
        let removedAt = try #require(body(wake)["cursor"] as? Int, "\(wake)")
        #expect(removedAt > cursor)

        for since in [cursor, 0] {
            let (page, entries) = try feed(scene, since: since)
            #expect(entries.count == 1, "since \(since): \(entries)")
            let entry = try #require(entries.first)
            #expect(entry["key"] as? [String: String] == ["name": "alice"])
            #expect(entry["removed"] as? Bool == true, "\(how): \(entry)")
            #expect(entry["value"] is NSNull, "\(how): \(entry)")
            #expect(entry["cursor"] as? Int == removedAt)
            #expect(page["cursor"] as? Int == removedAt)
            #expect(page["reset"] as? Bool == false)
        }
        await scene.router.waitUntil("the empty state set") {
            (body(envelopes(scene, "states.jsonl").last)["instances"] as? [Any])?.isEmpty == true
        }
    }

    /// Nothing more about alice follows her removal: the peer writes zed and, once zed's update
    /// is through, leaves; what came out is exactly alice's update and removal, then zed's.
    static func expectNothingMoreAboutAlice(_ scene: Scene, _ peer: StatePeer) async throws {
        peer.send("write zed IDLE")
        await scene.router.waitUntil("zed's update") { envelopes(scene, "changes.jsonl").count >= 3 }
        peer.send("quit")
        await scene.router.waitUntil("zed's removal as the peer leaves") {
            envelopes(scene, "changes.jsonl").count >= 4 && envelopes(scene, "wakes.jsonl").count >= 4
        }
        let changes = envelopes(scene, "changes.jsonl")
        #expect(
            changes.map { $0["type"] as? String ?? "" } == [participantType, "qeo.Removed", participantType, "qeo.Removed"], "\(changes)")
        #expect(changes.map(name) == ["alice", "alice", "zed", "zed"], "\(changes)")
        #expect(envelopes(scene, "wakes.jsonl").map { body($0)["removed"] as? Bool } == [false, true, false, true])
        let (_, entries) = try feed(scene, since: 0)
        #expect(entries.map { ($0["key"] as? [String: String])?["name"] ?? "" } == ["alice", "zed"], "\(entries)")
        #expect(entries.allSatisfy { $0["removed"] as? Bool == true && $0["value"] is NSNull }, "\(entries)")
        await scene.router.waitUntil("the peer left") { peer.lines.contains("ok quit") && !peer.process.isRunning }
        #expect(peer.process.terminationStatus == 0, "\(peer.standardError)")
    }

    /// `dds_writedispose`, the usual way a Qeo app removes its instance: one sample with a value
    /// (AWAY) and NOT_ALIVE_DISPOSED — a removal, its value reported nowhere.
    @Test func aWriteDisposeIsARemovalAndItsValueIsNotReported() async throws {
        let scene = try await Self.scene(domain: 153)
        let peer = try StatePeer(scene.peerExecutable, arguments: [scene.peerCredentials])
        let (instance, cursor) = try await Self.writeAlice(scene, peer)
        peer.send("writedispose alice AWAY")
        try await Self.expectAliceRemoved(scene, instance: instance, after: cursor, "writedispose")
        #expect(!Self.envelopes(scene, "changes.jsonl").contains { Self.body($0)["state"] as? String == "AWAY" })
        try await Self.expectNothingMoreAboutAlice(scene, peer)
        #expect(scene.router.stop() == 0)
    }

    /// `dds_dispose`: an invalid sample, NOT_ALIVE_DISPOSED.
    @Test func aDisposeIsARemoval() async throws {
        let scene = try await Self.scene(domain: 154)
        let peer = try StatePeer(scene.peerExecutable, arguments: [scene.peerCredentials])
        let (instance, cursor) = try await Self.writeAlice(scene, peer)
        peer.send("dispose alice")
        try await Self.expectAliceRemoved(scene, instance: instance, after: cursor, "dispose")
        try await Self.expectNothingMoreAboutAlice(scene, peer)
        #expect(scene.router.stop() == 0)
    }

    /// `dds_unregister_instance` while the writer lives on. With DDS's default writer data
    /// lifecycle (autodispose, as the qeo plugin's own writers) the unregister disposes too:
    /// NOT_ALIVE_DISPOSED. Without it (`--keep-unregistered`) the instance has no writer left:
    /// NOT_ALIVE_NO_WRITERS. Both are removals.
    @Test(arguments: [(false, 155), (true, 157)])
    func anUnregisterIsARemoval(keepUnregistered: Bool, domain: Int) async throws {
        let scene = try await Self.scene(domain: domain)
        let peer = try StatePeer(
            scene.peerExecutable, arguments: (keepUnregistered ? ["--keep-unregistered"] : []) + [scene.peerCredentials])
        let (instance, cursor) = try await Self.writeAlice(scene, peer)
        peer.send("unregister alice")
        let how = keepUnregistered ? "unregister, no autodispose" : "unregister"
        try await Self.expectAliceRemoved(scene, instance: instance, after: cursor, how)
        try await Self.expectNothingMoreAboutAlice(scene, peer)
        #expect(scene.router.stop() == 0)
    }

    /// The peer deletes its participant right after the write is through: its writer leaves
    /// (NOT_ALIVE_DISPOSED with autodispose, NOT_ALIVE_NO_WRITERS without).
    @Test(arguments: [(false, 156), (true, 158)])
    func theWriterLeavingIsARemoval(keepUnregistered: Bool, domain: Int) async throws {
        let scene = try await Self.scene(domain: domain)
        let peer = try StatePeer(
            scene.peerExecutable, arguments: (keepUnregistered ? ["--keep-unregistered"] : []) + [scene.peerCredentials])
        let (instance, cursor) = try await Self.writeAlice(scene, peer)
        peer.send("quit")
        try await Self.expectAliceRemoved(scene, instance: instance, after: cursor, "the writer left")
        await scene.router.waitUntil("the peer left") { peer.lines.contains("ok quit") && !peer.process.isRunning }
        #expect(peer.process.terminationStatus == 0, "\(peer.standardError)")
        #expect(Self.envelopes(scene, "changes.jsonl").count == 2)
        #expect(Self.envelopes(scene, "wakes.jsonl").count == 2)
        #expect(scene.router.stop() == 0)
    }

    /// The same peer without credentials on the realm's domain is never matched: what it writes
    /// reaches neither `changes` nor the feed, while a member's write does.
    @Test func aPeerWithoutTheRealmsCredentialsIsNotHeard() async throws {
        let scene = try await Self.scene(domain: 159)
        let outsider = try StatePeer(scene.peerExecutable, arguments: ["--domain", "159"])
        outsider.send("write mallory BUSY")
        await scene.router.waitUntil("the outsider's write") { outsider.lines.contains("ok write mallory BUSY") }
        // The member's write comes after a whole DDS Security handshake: the outsider's, had it
        // been accepted, would have come first.
        let member = try StatePeer(scene.peerExecutable, arguments: [scene.peerCredentials])
        _ = try await Self.writeAlice(scene, member)
        #expect(!outsider.lines.contains("matched"), "\(outsider.lines)")
        #expect(Self.envelopes(scene, "changes.jsonl").map(Self.name) == ["alice"])
        outsider.send("quit")
        await scene.router.waitUntil("the outsider left") { outsider.lines.contains("ok quit") }
        #expect(scene.router.stop() == 0)
    }
}
