import Foundation
import Testing

@testable import IntegrationSupport

/// Secured realms: routers with certificates from `switchyard qeo realm` exchange Qeo data over DDS
/// Security; a router of another realm hears nothing and is not heard; the policy decides who
/// may write. (Python's cyclonedds wheel has no DDS Security, so every peer here is a router.)
@Suite(.serialized, .timeLimit(.minutes(3)))
struct QeoRealmTests {
    static let chat = QeoTests.qdm.appendingPathComponent("QSimpleChat_ChatMessage.xml").path
    static let domain = 135

    /// Runs `switchyard qeo realm ARGUMENTS` (the qeo plugin's command) and returns its standard
    /// output's last line.
    @discardableResult
    static func realm(_ arguments: [String], in sandbox: Sandbox) throws -> String {
        if !FileManager.default.fileExists(atPath: sandbox.plugins.appendingPathComponent("libqeo.so").path) {
            try sandbox.installPlugin("qeo")
        }
        let result = try RouterProcess.runToExit(["--plugins", sandbox.plugins.path, "qeo", "realm"] + arguments, in: sandbox.root)
        guard result.status == 0 else { throw SandboxError("switchyard qeo realm \(arguments): \(result.errors)") }
        return result.output.split(separator: "\n").last.map(String.init) ?? ""
    }

    /// A router whose qeo instance joins with `credentials`: console lines become ChatMessages
    /// from `name`, ChatMessages it reads go to events.jsonl.
    static func router(_ name: String, credentials: String) async throws -> (Sandbox, RouterProcess) {
        let sandbox = try routes(name, credentials: credentials, writing: true)
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox, environment: ["CYCLONEDDS_URI": QeoTests.loopback])
        return (sandbox, router)
    }

    /// A sandbox with the route file of `router(_:credentials:)`; read-only without `writing`.
    static func routes(_ name: String, credentials: String, writing: Bool) throws -> Sandbox {
        let sandbox = try Sandbox(plugins: ["core", "qeo"])
        try sandbox.writeRoutes(
            """
            instances:
              realm:
                plugin: qeo
                qdm: \(chat)
                security: \(credentials)
                read: [org.qeo.sample.simplechat.ChatMessage]
                write: [\(writing ? "org.qeo.sample.simplechat.ChatMessage" : "")]
              in: { plugin: core, console: {} }
              events: { plugin: core, file: { path: "\(sandbox.path("events.jsonl"))" } }
            routes:
              - { from: realm.events, to: events.write }
            \(writing ? """
                  - from: in.lines
                    type: qeo.org.qeo.sample.simplechat.ChatMessage
                    map: { from: \(name), message: "{{body}}" }
                    to: realm.write
                """ : "")
            """)
        return sandbox
    }

    static func messages(_ sandbox: Sandbox) -> [String] {
        QeoTests.bodies(sandbox, "events.jsonl").compactMap { body in
            (body["from"] as? String).map { "\($0): \(body["message"] as? String ?? "")" }
        }
    }

    /// Sends `line` from `router` every 200 ms until `receiver` has it (at most 30 s: the
    /// authentication handshake comes first).
    static func deliver(_ line: String, from router: RouterProcess, as name: String, to receiver: Sandbox) {
        let deadline = ContinuousClock.now + .seconds(30)
        while !messages(receiver).contains("\(name): \(line)"), ContinuousClock.now < deadline {
            router.send(line + "\n")
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    @Test func membersOfOneRealmExchangeDataAndAnotherRealmGetsNothing() async throws {
        let authorities = try Sandbox()
        try Self.realm(["init", authorities.path("home"), "--id", "0x1a2b", "--domain", "\(Self.domain)"], in: authorities)
        try Self.realm(["add-user", authorities.path("home"), "alice"], in: authorities)
        let kitchen = try Self.realm(["add-device", authorities.path("home"), "kitchen", "--user", "1"], in: authorities)
        let hall = try Self.realm(["add-device", authorities.path("home"), "hall", "--user", "1"], in: authorities)
        // The neighbours' realm on the same domain, with its own CA. (Its own realm id too: Cyclone
        // derives the participant GUID from the certificate subject, so one subject in two realms
        // would be one GUID twice.)
        try Self.realm(["init", authorities.path("neighbours"), "--id", "0x5e5e", "--domain", "\(Self.domain)"], in: authorities)
        try Self.realm(["add-user", authorities.path("neighbours"), "eve"], in: authorities)
        let intruder = try Self.realm(["add-device", authorities.path("neighbours"), "laptop", "--user", "1"], in: authorities)

        let (hallBox, hallRouter) = try await Self.router("hall", credentials: hall)
        let (intruderBox, intruderRouter) = try await Self.router("eve", credentials: intruder)
        let (kitchenBox, kitchenRouter) = try await Self.router("kitchen", credentials: kitchen)
        for router in [hallRouter, intruderRouter, kitchenRouter] {
            await router.waitUntil("joined the secured domain") { router.standardError.contains("joined domain \(Self.domain) as") }
        }
        #expect(kitchenRouter.logged("joined domain \(Self.domain) as <rid:1a2b><did:1><uid:1>"))

        // One realm: both ways.
        Self.deliver("hello hall", from: kitchenRouter, as: "kitchen", to: hallBox)
        #expect(Self.messages(hallBox).contains("kitchen: hello hall"), "\(hallRouter.standardError)")
        Self.deliver("hello kitchen", from: hallRouter, as: "hall", to: kitchenBox)
        #expect(Self.messages(kitchenBox).contains("hall: hello kitchen"))

        // The other realm writes while the realm's members talk; nothing crosses either way.
        for _ in 0..<10 { intruderRouter.send("let me in\n") }
        Self.deliver("still here", from: kitchenRouter, as: "kitchen", to: hallBox)
        Self.deliver("still here too", from: hallRouter, as: "hall", to: kitchenBox)
        #expect(Self.messages(hallBox).contains("kitchen: still here"))
        #expect(Self.messages(kitchenBox).contains("hall: still here too"))
        #expect(!(Self.messages(hallBox) + Self.messages(kitchenBox)).contains { $0.hasPrefix("eve") })
        #expect(Self.messages(intruderBox).isEmpty, "\(Self.messages(intruderBox))")

        for router in [kitchenRouter, hallRouter, intruderRouter] { #expect(router.stop() == 0) }
        _ = (hallBox, kitchenBox, intruderBox, authorities)
    }

    @Test func thePolicyDecidesWhoMayWriteATopic() async throws {
        let authorities = try Sandbox()
        let home = authorities.path("home")
        try Self.realm(["init", home, "--domain", "137"], in: authorities)
        try Self.realm(["add-user", home, "alice"], in: authorities)
        try Self.realm(["add-user", home, "guest", "--id", "0x20"], in: authorities)
        let kitchen = try Self.realm(["add-device", home, "kitchen", "--user", "1"], in: authorities)
        let television = try Self.realm(["add-device", home, "tv", "--user", "0x20"], in: authorities)
        try """
        [meta]
        version=1.0
        seqnr=2
        [uid:1]
        *=rw
        [uid:20]
        org::qeo::sample::simplechat::ChatMessage=r

        """.write(toFile: authorities.path("policy"), atomically: true, encoding: .utf8)
        try Self.realm(["policy", home, authorities.path("policy")], in: authorities)

        // The guest's device may not write the topic: its router says so and does not start.
        let writing = try Self.routes("tv", credentials: television, writing: true)
        let refused = try RouterProcess.runToExit(
            ["run", writing.path("routes"), "--plugins", writing.path("plugins")], in: writing.root,
            environment: ["CYCLONEDDS_URI": QeoTests.loopback])
        #expect(refused.status != 0)
        #expect(
            refused.errors.contains("creating a writer for org/qeo/sample/simplechat/ChatMessage: Not Allowed By Security"),
            "\(refused.errors)")

        // Ids in the configuration must be the credentials' ids.
        let mismatched = try Self.routes("tv", credentials: television, writing: false)
        let text = try String(contentsOf: mismatched.routes.appendingPathComponent("main.yaml"), encoding: .utf8)
        try mismatched.writeRoutes(text.replacingOccurrences(of: "    plugin: qeo\n", with: "    plugin: qeo\n    user: 5\n"))
        let wrongUser = try RouterProcess.runToExit(
            ["run", mismatched.path("routes"), "--plugins", mismatched.path("plugins")], in: mismatched.root,
            environment: ["CYCLONEDDS_URI": QeoTests.loopback])
        #expect(wrongUser.status != 0)
        #expect(wrongUser.errors.contains("user: 0x5 differs from 0x20 of the credentials in \(television)"), "\(wrongUser.errors)")

        // Reading is granted: the guest hears alice's kitchen.
        let reading = try Self.routes("tv", credentials: television, writing: false)
        let (readingRouter, _) = try await RouterProcess.startWithAdmin(reading, environment: ["CYCLONEDDS_URI": QeoTests.loopback])
        let (kitchenBox, kitchenRouter) = try await Self.router("kitchen", credentials: kitchen)
        await readingRouter.waitUntil("joined the domain") { readingRouter.standardError.contains("joined domain 137 as") }
        Self.deliver("on air", from: kitchenRouter, as: "kitchen", to: reading)
        #expect(Self.messages(reading).contains("kitchen: on air"))
        for router in [kitchenRouter, readingRouter] { #expect(router.stop() == 0) }
        _ = (kitchenBox, authorities)
    }
}
