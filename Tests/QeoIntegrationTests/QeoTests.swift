import Foundation
import Testing

@testable import IntegrationSupport

/// The qeo plugin through the router binary, against Python `cyclonedds` peers (each test on a DDS domain of its own)
/// (the QSimpleChat types): events both ways, state changes and removal, late-joining state,
/// and the errors for bad QDM and wrong-typed bodies.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct QeoTests {
    static let qdm = BuildProducts.packageRoot.appendingPathComponent("Tests/QeoQDMTests/QDM")
    static let peerScript = BuildProducts.packageRoot.appendingPathComponent("Tests/QeoDDSTests/qeo_peer.py")
    /// DDS on loopback only, its ports below the ephemeral range.
    static let loopback = CycloneLoopback.configuration

    /// A Python peer; its standard output is collected, its standard input kept open.
    final class Peer {
        let process = Process()
        let input = Pipe()
        private let output = Pipe()
        private let buffer = OutputBuffer()
        private var reader: PipeReader?

        init(_ arguments: [String], domain: Int) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", QeoTests.peerScript.path] + arguments
            var environment = ProcessInfo.processInfo.environment
            environment["CYCLONEDDS_URI"] = QeoTests.loopback
            environment["QEO_DOMAIN"] = String(domain)
            process.environment = environment
            process.standardOutput = output
            process.standardInput = input
            reader = PipeReader(output, into: buffer)
            // With an empty signal mask, so terminate() ends it.
            try ChildProcess.start(process)
        }

        var text: String { buffer.text }

        /// Writes a line to the peer; a peer that is gone is a failed test, not a trap (the
        /// non-throwing `write(_:)` kills the whole test process on a broken pipe).
        func send(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
            } catch {
                Issue.record("the DDS peer is gone (\(error)); it wrote:\n\(text)", sourceLocation: sourceLocation)
            }
        }

        /// Closes its standard input: a `participant` peer exits, and its writer leaves.
        func closeInput() { try? input.fileHandleForWriting.close() }

        deinit {
            try? input.fileHandleForWriting.close()
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            reader?.stop()
        }
    }

    static func start(
        _ sandbox: Sandbox, domain: Int, qdm files: [String] = ["QSimpleChat_ChatMessage.xml", "QSimpleChat_ChatParticipant.xml"]
    )
        async throws -> (RouterProcess, String)
    {
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("qeo")
        let paths = files.map { qdm.appendingPathComponent($0).path }.joined(separator: ", ")
        try sandbox.writeRoutes(
            """
            instances:
              home:
                plugin: qeo
                qdm: [\(paths)]
                domain: \(domain)
                realm: 0x1234
                user: 7
                device: "0xd1"
                read: [org.qeo.sample.simplechat.ChatMessage, org.qeo.sample.simplechat.ChatParticipant]
                write: [org.qeo.sample.simplechat.ChatMessage]
              in: { plugin: core, console: {} }
              events: { plugin: core, file: { path: "\(sandbox.path("events.jsonl"))" } }
              changes: { plugin: core, file: { path: "\(sandbox.path("changes.jsonl"))" } }
              states: { plugin: core, file: { path: "\(sandbox.path("states.jsonl"))" } }
            routes:
              - { from: home.events, to: events.write }
              - { from: home.changes, to: changes.write }
              - { from: home.states, to: states.write }
              - from: in.lines
                type: qeo.org.qeo.sample.simplechat.ChatMessage
                map: { from: router, message: "{{body}}" }
                to: home.write
            """)
        return try await RouterProcess.startWithAdmin(sandbox, environment: ["CYCLONEDDS_URI": loopback])
    }

    static func bodies(_ sandbox: Sandbox, _ file: String) -> [[String: Any]] {
        ((try? sandbox.jsonLines(of: file)) ?? []).compactMap { $0["body"] as? [String: Any] }
    }

    @Test func chatMessagesCrossBothWaysAndTheRouterDoesNotHearItself() async throws {
        let sandbox = try Sandbox()
        // Each test on a domain of its own, so tests running at the same time do not hear each other.
        let (router, _) = try await Self.start(sandbox, domain: 132)
        await router.waitUntil("joined the domain") { router.standardError.contains("joined domain 132 as <rid:1234><did:d1><uid:7>") }

        // In: a Python writer's events become typed envelopes.
        let publisher = try Peer(["pub-chat", "python", "hello router"], domain: 132)
        await router.waitUntil("an event from the peer") { !Self.bodies(sandbox, "events.jsonl").isEmpty }
        let first = try #require(try sandbox.jsonLines(of: "events.jsonl").first)
        #expect(first["type"] as? String == "qeo.org.qeo.sample.simplechat.ChatMessage")
        #expect(first["subject"] as? String == "org.qeo.sample.simplechat.ChatMessage")
        #expect((first["body"] as? [String: String]) == ["from": "python", "message": "hello router"])
        _ = publisher

        // Out: the router's write reaches a Python reader; the router does not read it back.
        let subscriber = try Peer(["sub-chat", "20"], domain: 132)
        let deadline = ContinuousClock.now + .seconds(20)
        while !subscriber.text.contains("hello python"), ContinuousClock.now < deadline {
            router.send("hello python\n")
            try? await Task.sleep(for: .milliseconds(200))
        }
        #expect(subscriber.text.contains(#"{"from": "router", "message": "hello python"}"#), "\(subscriber.text)")
        #expect(Self.bodies(sandbox, "events.jsonl").allSatisfy { $0["from"] as? String == "python" })
        #expect(router.stop() == 0)
    }

    @Test func aFullRouteHoldsTheDDSReaderUntilTheRouterHasRoomAndDropsNothing() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("qeo")
        try sandbox.installPlugin("testkit")
        let qdm = Self.qdm.appendingPathComponent("QSimpleChat_ChatMessage.xml").path
        // A sink that takes one message at a time, 20 ms each, behind a queue of one: the qeo
        // reader's emits find the route full and wait for the router's resume.
        try sandbox.writeRoutes(
            """
            instances:
              home: { plugin: qeo, qdm: [\(qdm)], domain: 159, realm: 0x1234, user: 7, device: "0xd1", read: [org.qeo.sample.simplechat.ChatMessage] }
              slow: { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", delay_ms: 20, max_in_flight: 1 } }
            routes:
              - { from: home.events, to: slow.collect, queue: { size: 1, on_full: block } }
            """)
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox, environment: ["CYCLONEDDS_URI": Self.loopback])
        await router.waitUntil("joined the domain") { router.standardError.contains("joined domain 159") }
        let publisher = try Peer(["pub-count", "python", "60"], domain: 159)
        await router.waitUntil("all 60 messages collected") { sandbox.lines(of: "collected.txt").count == 60 }
        #expect(publisher.text.contains("written"), "\(publisher.text)")
        // Each wait ended with a resume, well within the 2 s after which a sample is dropped.
        #expect(!router.standardError.contains("dropped a"), "\(router.standardError)")
        #expect(router.stop() == 0)
    }

    /// However the peer removes its instance — disposed, disposed with a value in the same
    /// sample (`write_dispose`, once reported as an update with that value), unregistered, or
    /// its writer leaving — the router reports a `qeo.Removed` and the state set empties.
    @Test(arguments: [("remove", 133), ("writedispose AWAY", 150), ("unregister", 151), ("leave", 152)])
    func stateChangesAndRemovalReachTheStateReaders(how: String, domain: Int) async throws {
        // Written before the router joins: transient-local state reaches the late joiner.
        let peer = try Peer(["participant", "alice", "BUSY"], domain: domain)
        let sandbox = try Sandbox()
        let (router, _) = try await Self.start(sandbox, domain: domain)
        await router.waitUntil("the current state") { !Self.bodies(sandbox, "changes.jsonl").isEmpty }
        #expect((Self.bodies(sandbox, "changes.jsonl").first as? [String: String]) == ["name": "alice", "state": "BUSY"])
        // The state set comes out of its own port, through its own route and file.
        await router.waitUntil("the state set") {
            (Self.bodies(sandbox, "states.jsonl").last?["instances"] as? [[String: String]]) == [["name": "alice", "state": "BUSY"]]
        }

        if how == "leave" { peer.closeInput() } else { peer.send(how) }
        await router.waitUntil("the removal") { Self.bodies(sandbox, "changes.jsonl").count >= 2 }
        let removal = try #require(try sandbox.jsonLines(of: "changes.jsonl").last)
        #expect(Self.bodies(sandbox, "changes.jsonl").count == 2, "\(how): \(Self.bodies(sandbox, "changes.jsonl"))")
        #expect(removal["type"] as? String == "qeo.Removed", "\(how): \(removal)")
        #expect((removal["body"] as? [String: Any])?["key"] as? [String: String] == ["name": "alice"])
        await router.waitUntil("the empty state set") {
            (Self.bodies(sandbox, "states.jsonl").last?["instances"] as? [Any])?.isEmpty == true
        }
        #expect(router.stop() == 0)
    }

    /// A DDS network interface that is missing at start is an outage, not a configuration
    /// error: the instance starts not ready, says why, keeps trying, and every other route runs.
    @Test func aMissingNetworkInterfaceLeavesTheInstanceNotReadyAndTheRouterRunning() async throws {
        let sandbox = try Sandbox(plugins: ["core", "qeo"])
        let path = Self.qdm.appendingPathComponent("QSimpleChat_ChatMessage.xml").path
        try sandbox.writeRoutes(
            """
            instances:
              home: { plugin: qeo, qdm: \(path), domain: 135, read: [org.qeo.sample.simplechat.ChatMessage] }
              out: { plugin: core, console: {} }
              clock: { plugin: core, timer: { interval: 20ms } }
              ticks: { plugin: core, file: { path: "\(sandbox.path("ticks.jsonl"))" } }
            routes:
              - { from: home.events, to: out.print }
              - { from: clock.tick, to: ticks.write }
            """)
        let missing = Self.loopback.replacingOccurrences(of: #"name="lo" multicast="true""#, with: #"name="nope0""#)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["CYCLONEDDS_URI": missing])
        await router.waitUntil("the timer route delivers") { sandbox.lines(of: "ticks.jsonl").count >= 5 }
        let readiness = try HTTPExchange.send("http://\(admin)/readyz")
        #expect(readiness.status == 503)
        #expect(readiness.body.contains("home: qeo: creating a participant on domain 135"), "\(readiness.body)")
        // Cyclone's own code is a bare "Error": the error says what usually causes it.
        #expect(readiness.body.contains("a network interface that CYCLONEDDS_URI names is missing"), "\(readiness.body)")
        await router.waitUntil("a second attempt") { router.standardError.contains("still not ready, retrying in 2") }
        #expect(router.stop() == 0)
    }

    @Test func theRouterWritesAndRemovesStateThatAPeerSees() async throws {
        let sandbox = try Sandbox(plugins: ["core", "qeo"])
        let path = Self.qdm.appendingPathComponent("QSimpleChat_ChatParticipant.xml").path
        try sandbox.writeRoutes(
            """
            instances:
              home: { plugin: qeo, qdm: \(path), domain: 134, write: [org.qeo.sample.simplechat.ChatParticipant] }
              in: { plugin: core, console: {} }
            routes:
              - from: in.lines
                when: 'body != "leave"'
                type: qeo.org.qeo.sample.simplechat.ChatParticipant
                map: { name: router, state: "{{body}}" }
                to: home.write
              - from: in.lines
                when: 'body == "leave"'
                type: qeo.Remove
                map: { type: org.qeo.sample.simplechat.ChatParticipant, key: { name: router } }
                to: home.write
            """)
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox, environment: ["CYCLONEDDS_URI": Self.loopback])
        router.send("IDLE\n")
        // Written before the reader exists: transient-local state reaches the late joiner.
        let watcher = try Peer(["watch-participants"], domain: 134)
        let deadline = ContinuousClock.now + .seconds(20)
        while !watcher.text.contains("IDLE"), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        #expect(watcher.text.contains(#"{"name": "router", "state": "IDLE"}"#), "\(watcher.text)")
        router.send("leave\n")
        let removal = ContinuousClock.now + .seconds(20)
        while !watcher.text.contains("disposed"), ContinuousClock.now < removal { try? await Task.sleep(for: .milliseconds(50)) }
        #expect(watcher.text.contains(#"{"disposed": true}"#), "\(watcher.text)\n\(router.standardError)")
        #expect(router.stop() == 0)
    }

    /// examples/qsimplechat-bridge as its README runs it: QSimpleChat peers on domain 128 and a
    /// Mosquitto, chat both ways and participants' states as retained messages.
    @Test func theQSimpleChatBridgeExample() async throws {
        let example = BuildProducts.packageRoot.appendingPathComponent("examples/qsimplechat-bridge")
        let broker = try Mosquitto()
        let chat = try MosquittoSubscriber(broker, topic: "qeo/chat", qos: 1)
        let participants = try MosquittoSubscriber(broker, topic: "qeo/participants/#", qos: 1)
        let sandbox = try Sandbox(plugins: ["core", "qeo", "mqtt"])
        try sandbox.writeRoutes(try String(contentsOf: example.appendingPathComponent("routes.yaml"), encoding: .utf8))
        let (router, _) = try await RouterProcess.startWithAdmin(
            sandbox,
            environment: [
                "CYCLONEDDS_URI": Self.loopback, "QDM_DIR": example.appendingPathComponent("qdm").path, "MQTT_PORT": String(broker.port),
            ])
        await router.waitUntil("joined the realm") { router.standardError.contains("joined domain 128 as <rid:1234><did:b41d6e><uid:7>") }

        let bob = try Peer(["participant", "bob", "AVAILABLE"], domain: 128)
        #expect(participants.waitForLines(1).first == "qeo/participants/bob AVAILABLE")
        let publisher = try Peer(["pub-chat", "bob", "hi from qeo"], domain: 128)
        #expect(chat.waitForLines(1).first == #"qeo/chat {"from":"bob","message":"hi from qeo"}"#)
        _ = (bob, publisher)

        let subscriber = try Peer(["sub-chat", "20"], domain: 128)
        let deadline = ContinuousClock.now + .seconds(20)
        while !subscriber.text.contains("hi from mqtt"), ContinuousClock.now < deadline {
            try broker.publish(topic: "qeo/chat/in", message: #"{"from": "carol", "message": "hi from mqtt"}"#, qos: 1)
            try? await Task.sleep(for: .milliseconds(200))
        }
        #expect(subscriber.text.contains(#"{"from": "carol", "message": "hi from mqtt"}"#), "\(subscriber.text)")

        // The bridge is a participant, as a QSimpleChat app is: it joined as "mqtt", takes the
        // state published to it, and its instance goes when it leaves.
        let watcher = try Peer(["watch-participants"], domain: 128)
        func waitFor(_ text: String, _ what: String) async {
            let deadline = ContinuousClock.now + .seconds(20)
            while !watcher.text.contains(text), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
            #expect(watcher.text.contains(text), "\(what): \(watcher.text)")
        }
        await waitFor(#"{"name": "mqtt", "state": "AVAILABLE"}"#, "joined")
        try broker.publish(topic: "qeo/participant/state", message: "BUSY", qos: 1)
        await waitFor(#"{"name": "mqtt", "state": "BUSY"}"#, "a new state")
        try broker.publish(topic: "qeo/participant/leave", message: "bye", qos: 1)
        await waitFor(#"{"disposed": true}"#, "left")
        #expect(router.stop() == 0)
    }

    @Test func theQGaugeExample() async throws {
        let example = BuildProducts.packageRoot.appendingPathComponent("examples/qgauge")
        let environment = [
            "CYCLONEDDS_URI": Self.loopback, "QDM_DIR": example.appendingPathComponent("qdm").path,
            "QGAUGE_SCRIPT": example.appendingPathComponent("netstat.sh").path, "QGAUGE_INTERVAL": "1",
        ]
        var routers: [(Sandbox, RouterProcess)] = []
        for side in ["viewer", "publisher"] {
            let sandbox = try Sandbox(plugins: ["core", "qeo"])
            try sandbox.writeRoutes(
                try String(contentsOf: example.appendingPathComponent("\(side)/routes.yaml"), encoding: .utf8))
            await routers.append((sandbox, try RouterProcess.startWithAdmin(sandbox, environment: environment).0))
        }
        let viewer = routers[0].1
        // The loopback interface carries the DDS traffic itself, so its counters are never zero.
        // As the seed's readers get it: raw counters and a timestamp in nanoseconds, under the
        // publishing device's id.
        let line = /^-?[0-9]+:-?[0-9]+ lo in ([0-9]+) B\/([0-9]+) pkts out ([0-9]+) B\/([0-9]+) pkts at ([0-9]+) ns$/
        await viewer.waitUntil("loopback statistics") {
            viewer.standardOutput.split(separator: "\n").contains { (try? line.wholeMatch(in: String($0))) != nil }
        }
        let match = try #require(
            viewer.standardOutput.split(separator: "\n").compactMap { try? line.wholeMatch(in: String($0)) }.first)
        #expect((Int(match.output.1) ?? 0) > 0 && (Int(match.output.2) ?? 0) > 0)
        let timestamp = Double(match.output.5) ?? 0
        #expect(abs(timestamp / 1e9 - Date().timeIntervalSince1970) < 60)
        // DeviceInfo, published once as state, names the device (it may come after the first
        // statistics: the two are different topics).
        let device = /^device -?[0-9]+:-?[0-9]+ is .+/
        await viewer.waitUntil("the device's DeviceInfo") {
            viewer.standardOutput.split(separator: "\n").contains { (try? device.wholeMatch(in: String($0))) != nil }
        }
        for (_, router) in routers.reversed() { #expect(router.stop() == 0) }
    }

    @Test func aMapThatDoesNotFitTheQDMTypeFailsValidation() throws {
        let sandbox = try Sandbox(plugins: ["core", "qeo"])
        let path = Self.qdm.appendingPathComponent("QSimpleChat_ChatMessage.xml").path
        try sandbox.writeRoutes(
            """
            instances:
              home: { plugin: qeo, qdm: [\(path)], write: [org.qeo.sample.simplechat.ChatMessage] }
              in: { plugin: core, console: {} }
            routes:
              - { from: in.lines, type: qeo.org.qeo.sample.simplechat.ChatMessage, map: { from: x, text: "{{body}}" }, to: home.write }
            """)
        let result = try RouterProcess.runToExit(["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status != 0)
        #expect(
            result.errors.contains(
                "map does not build a qeo.org.qeo.sample.simplechat.ChatMessage: text is not a field of it (fields: from, message)"),
            "\(result.errors)")
    }

    @Test func aBrokenQDMFileStopsValidationWithItsLine() throws {
        let sandbox = try Sandbox(plugins: ["qeo"])
        let bad = sandbox.path("bad.xml")
        try
            "<types>\n<module name=\"m\">\n<struct name=\"S\" behavior=\"event\"><member name=\"x\" type=\"nonBasic\"/></struct></module></types>"
            .write(toFile: bad, atomically: true, encoding: .utf8)
        try sandbox.writeRoutes("instances:\n  home: { plugin: qeo, qdm: \(bad), read: [m.S] }\n")
        let result = try RouterProcess.runToExit(["validate", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status != 0)
        #expect(result.errors.contains("\(bad):3: member x has type=\"nonBasic\" but no nonBasicTypeName"), "\(result.errors)")
    }

    /// The instance's QDM files give its types through describe(): routes are checked against
    /// them by `validate`, with no `types:` entry, and mistakes point at the route file.
    @Test func theQDMTypesComeFromTheInstanceThroughDescribe() throws {
        let sandbox = try Sandbox(plugins: ["core", "qeo"])
        let path = Self.qdm.appendingPathComponent("QSimpleChat_ChatMessage.xml").path
        let file = sandbox.routes.appendingPathComponent("main.yaml").path
        func validate(_ yaml: String) throws -> (status: Int32, errors: String) {
            try sandbox.writeRoutes(yaml)
            let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
            return (result.status, result.errors)
        }
        func routes(read: String, route: String) -> String {
            """
            instances:
              home: { plugin: qeo, qdm: [\(path)], read: [\(read)], write: [org.qeo.sample.simplechat.ChatMessage] }
              out: { plugin: core, console: {} }
            routes:
              - \(route)
            """
        }
        let good = try validate(
            routes(
                read: "org.qeo.sample.simplechat.ChatMessage", route: #"{ from: home.events, template: "{{body.message}}", to: out.print }"#
            ))
        #expect(good.status == 0, "\(good.errors)")

        // The events port carries the topics read: a field the QDM struct lacks is an error.
        let misread = try validate(
            routes(
                read: "org.qeo.sample.simplechat.ChatMessage", route: #"{ from: home.events, template: "{{body.text}}", to: out.print }"#))
        #expect(misread.status == 1)
        #expect(misread.errors.contains("type qeo.org.qeo.sample.simplechat.ChatMessage has no field 'text'"), "\(misread.errors)")

        // A topic the files do not have is reported at its entry in `read`.
        let yaml = routes(read: "org.qeo.sample.simplechat.ChatMessage, org.qeo.Nope", route: "{ from: home.events, to: out.print }")
        let unknown = try validate(yaml)
        let entry = try #require(position(of: "org.qeo.Nope", in: yaml))
        #expect(
            unknown.errors.contains(
                "\(file):\(entry.line):\(entry.column): error: instance 'home' (plugin qeo): /read/1: org.qeo.Nope is not a type of the QDM files"
            ), "\(unknown.errors)")

        // A route file of earlier versions: the bare QDM name is unknown, with the name to use.
        let bare = try validate(
            routes(
                read: "org.qeo.sample.simplechat.ChatMessage",
                route: "{ from: out.lines, type: org.qeo.sample.simplechat.ChatMessage, map: { from: a, message: b }, to: home.write }"))
        #expect(
            bare.errors.contains(
                "error: unknown type 'org.qeo.sample.simplechat.ChatMessage' (did you mean 'qeo.org.qeo.sample.simplechat.ChatMessage'?)"),
            "\(bare.errors)")

        // … and its `types: - qdm:` entry says what to do instead.
        let old = try validate(
            "types:\n  - qdm: \(path)\n"
                + routes(read: "org.qeo.sample.simplechat.ChatMessage", route: "{ from: home.events, to: out.print }"))
        #expect(old.status == 1)
        #expect(
            old.errors.contains("\(file):2:10: error: 'qdm' belongs to the qeo instance, not to 'types': remove this entry"),
            "\(old.errors)")
    }
}
