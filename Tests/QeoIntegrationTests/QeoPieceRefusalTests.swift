import Foundation
import Testing

@testable import IntegrationSupport

/// The qeo plugin's pieces refuse honestly: an iiidea whose action writes a topic the realm's
/// policy lets the instance's member only read is inactive, naming the member and the topic,
/// and becomes active when it is enabled again under a policy that grants writing.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct QeoPieceRefusalTests {
    static let topic = "org.qeo.sample.simplechat.ChatMessage"

    /// Installs a policy whose only rule gives user 0x20 `rights` on the chat topic.
    static func install(rights: String, seqnr: Int, home: String, in authorities: Sandbox) throws {
        let file = authorities.path("policy-\(seqnr)")
        try """
        [meta]
        version=1.0
        seqnr=\(seqnr)
        [uid:20]
        org::qeo::sample::simplechat::ChatMessage=\(rights)

        """.write(toFile: file, atomically: true, encoding: .utf8)
        try QeoRealmTests.realm(["policy", home, file], in: authorities)
    }

    /// The iiidea `echo` as `GET /v1/iiideas` shows it.
    static func echo(_ admin: String) throws -> [String: Any] {
        let listed = try HTTPExchange.send("http://" + admin + "/v1/iiideas")
        let iiideas = (try? JSONSerialization.jsonObject(with: Data(listed.body.utf8))) as? [[String: Any]] ?? []
        return iiideas.first { $0["id"] as? String == "echo" } ?? [:]
    }

    @Test func anActionOnATopicThePolicyOnlyLetsTheMemberReadIsInactiveUntilWritingIsGranted() async throws {
        let authorities = try Sandbox()
        let home = authorities.path("home")
        try QeoRealmTests.realm(["init", home, "--domain", "141"], in: authorities)
        try QeoRealmTests.realm(["add-user", home, "guest", "--id", "0x20"], in: authorities)
        let television = try QeoRealmTests.realm(["add-device", home, "tv", "--user", "0x20"], in: authorities)

        // The instance joins while the initial policy lets every member read and write: Cyclone
        // refuses a writer the permissions deny at start, so a read-only member's instance that
        // writes the topic would not start at all (QeoRealmTests). The iiidea waits, disabled.
        let sandbox = try Sandbox(plugins: ["core", "qeo"])
        try sandbox.writeRoutes(
            """
            instances:
              realm:
                plugin: qeo
                qdm: \(QeoRealmTests.chat)
                security: \(television)
                read: [\(Self.topic)]
                write: [\(Self.topic)]
            iiideas:
              - id: echo
                trigger: { port: realm.events }
                service: { piece: pass }
                action:  { port: realm.write }
                enabled: false
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["CYCLONEDDS_URI": QeoTests.loopback])
        await router.waitUntil("joined the secured domain") { router.standardError.contains("joined domain 141 as") }

        // Now the guest may only read the topic: enabling the iiidea asks its pieces against that
        // policy; the trigger (reading) accepts, the action (writing) refuses.
        try Self.install(rights: "r", seqnr: 2, home: home, in: authorities)
        let reason =
            "realm.write refused: realm member 'guest' (uid:20) may not write topic '\(Self.topic)' (its policy grants: read)"
        let enabled = try HTTPExchange.send("http://" + admin + "/v1/iiideas/echo/enable", method: "POST")
        let answer = enabled.json
        #expect(enabled.status == 200, "\(enabled.body)")
        #expect(answer["active"] as? Bool == false, "\(enabled.body)")
        #expect(answer["inactive_reason"] as? String == reason, "\(enabled.body)")
        let listed = try Self.echo(admin)
        #expect(listed["enabled"] as? Bool == true)
        #expect(listed["active"] as? Bool == false)
        #expect(listed["inactive_reason"] as? String == reason, "\(listed)")

        // Control: under a policy that grants writing, enabling it again asks the pieces again
        // and the iiidea is active.
        try Self.install(rights: "rw", seqnr: 3, home: home, in: authorities)
        #expect(try HTTPExchange.send("http://" + admin + "/v1/iiideas/echo/disable", method: "POST").status == 200)
        let again = try HTTPExchange.send("http://" + admin + "/v1/iiideas/echo/enable", method: "POST")
        #expect(again.json["active"] as? Bool == true, "\(again.body)")
        #expect(try Self.echo(admin)["inactive_reason"] == nil)
        #expect(router.stop() == 0)
        _ = authorities
    }
}
