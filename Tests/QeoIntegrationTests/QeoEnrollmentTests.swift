import Foundation
import Testing

@testable import IntegrationSupport

/// A realm's lifecycle through the router's enrollment endpoint: a device (Python, with the
/// cryptography package) enrolls with a one-time code, a router running on its credentials
/// joins the secured realm for real, codes are refused once used, expired or unknown, revoked
/// members can neither renew nor join, and watched state changes wake members through FCM and
/// wait for them in their feed.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct QeoEnrollmentTests {
    static let participant = QeoTests.qdm.appendingPathComponent("QSimpleChat_ChatParticipant.xml").path

    /// A realm (`home`, user 1 `alice`) in a fresh sandbox with the router's own device 1;
    /// returns the sandbox and the realm directory.
    static func realm(domain: Int) throws -> (Sandbox, String) {
        let authorities = try Sandbox()
        let home = authorities.path("home")
        try QeoRealmTests.realm(["init", home, "--domain", String(domain)], in: authorities)
        try QeoRealmTests.realm(["add-user", home, "alice"], in: authorities)
        try QeoRealmTests.realm(["add-device", home, "router", "--user", "1"], in: authorities)
        return (authorities, home)
    }

    /// The router serving the realm: chat messages it reads go to events.jsonl; `extra` adds
    /// instances and routes (YAML under `instances:` and `routes:`).
    static func authorityRouter(
        home: String, enroll: String = "", wake: String? = nil, read: [String] = ["org.qeo.sample.simplechat.ChatMessage"],
        qdm: [String] = [QeoRealmTests.chat], extraInstances: String = "", extraRoutes: String = ""
    ) async throws -> (Sandbox, RouterProcess, String) {
        let sandbox = try Sandbox(plugins: ["core", "qeo", "push"])
        try sandbox.writeRoutes(
            """
            instances:
              realm:
                plugin: qeo
                qdm: [\(qdm.joined(separator: ", "))]
                security: \(home)/devices/1
                read: [\(read.joined(separator: ", "))]
                enroll: { listen: "127.0.0.1:0", realm: \(home)\(enroll) }
                \(wake.map { "wake: { topics: [\($0)] }" } ?? "")
              events: { plugin: core, file: { path: "\(sandbox.path("events.jsonl"))" } }
            \(extraInstances)
            routes:
              \(read.contains("org.qeo.sample.simplechat.ChatMessage") ? "- { from: realm.events, to: events.write }" : "")
            \(extraRoutes)
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["CYCLONEDDS_URI": QeoTests.loopback])
        await router.waitUntil("the enrollment endpoint") { router.standardError.contains("enrollment listening on https://") }
        let line = try #require(router.standardError.split(separator: "\n").first { $0.contains("enrollment listening on https://") })
        let start = try #require(line.range(of: "https://")).lowerBound
        let url = String(line[start...].prefix { !$0.isWhitespace && $0 != "\"" })
        return (sandbox, router, admin + "|" + url)
    }

    /// `realm otc HOME 1 …`: the code and the CA fingerprint it printed.
    static func code(_ home: String, in sandbox: Sandbox, expires: String = "2m") throws -> (code: String, fingerprint: String) {
        let result = try RouterProcess.runToExit(
            ["--plugins", sandbox.plugins.path, "qeo", "realm", "otc", home, "1", "--name", "phone", "--expires", expires], in: sandbox.root
        )
        #expect(result.status == 0, "\(result.errors)")
        func field(_ name: String) -> String {
            result.output.split(separator: "\n").first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) } ?? ""
        }
        // The QR code follows the text: half blocks, two modules a row.
        #expect(result.output.contains("█"), "\(result.output)")
        return (field("code"), field("ca-sha256"))
    }

    /// Runs the Python device (`qeo_device.py COMMAND ARGUMENTS`) and returns its answer.
    static func device(_ arguments: [String], in sandbox: Sandbox) throws -> (status: Int, body: [String: Any]) {
        let script = BuildProducts.packageRoot.appendingPathComponent("examples/qeo-enrollment/qeo_device.py").path
        let result = try Tool.run("/usr/bin/env", ["python3", script] + arguments)
        let line = result.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let answer = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        guard let answer, let status = answer["status"] as? Int else {
            throw SandboxError("qeo_device.py \(arguments.first ?? ""): \(result.output)")
        }
        return (status, answer["body"] as? [String: Any] ?? [:])
    }

    @Test func aDeviceEnrollsWithACodeJoinsTheRealmAndCodesWorkOnce() async throws {
        let (authorities, home) = try Self.realm(domain: 138)
        let (sandbox, router, endpoints) = try await Self.authorityRouter(home: home, enroll: ", throttle: { failures: 4, window: 60s }")
        let (admin, url) = (String(endpoints.split(separator: "|")[0]), String(endpoints.split(separator: "|")[1]))
        let issued = try Self.code(home, in: authorities)
        let phone = authorities.path("phone")

        let enrolled = try Self.device(["enroll", url, issued.code, issued.fingerprint, phone], in: authorities)
        #expect(enrolled.status == 200, "\(enrolled.body)")
        #expect(enrolled.body["user"] as? String == "0x1")
        #expect(enrolled.body["device"] as? String == "0x2")
        // The enrolled device joins for real: a router on its credentials writes a chat message
        // over DDS Security that the authority's router reads.
        let (_, peer) = try await QeoRealmTests.router("phone", credentials: phone)
        QeoRealmTests.deliver("hello from the phone", from: peer, as: "phone", to: sandbox)
        #expect(QeoRealmTests.messages(sandbox).contains("phone: hello from the phone"), "\(router.standardError)")

        // A code works once; an unknown and an expired one are refused, each distinctly.
        let again = try Self.device(["enroll", url, issued.code, issued.fingerprint, authorities.path("again")], in: authorities)
        #expect(again.status == 409 && again.body["error"] as? String == "used_code", "\(again)")
        let unknown = try Self.device(["enroll", url, "2345-6789-ABCD", issued.fingerprint, authorities.path("x")], in: authorities)
        #expect(unknown.status == 404 && unknown.body["error"] as? String == "unknown_code", "\(unknown)")
        let short = try Self.code(home, in: authorities, expires: "1s")
        // The code's expiry is the clock's business: wait until it has passed.
        try? await Task.sleep(for: .milliseconds(1200))
        let expired = try Self.device(["enroll", url, short.code, short.fingerprint, authorities.path("late")], in: authorities)
        #expect(expired.status == 410 && expired.body["error"] as? String == "expired_code", "\(expired)")
        // A wrong fingerprint is refused by the device before it sends its code.
        let pinned = try Self.device(
            ["enroll", url, short.code, String(repeating: "0", count: 64), authorities.path("y")], in: authorities)
        #expect(pinned.status == 0 && pinned.body["error"] as? String == "fingerprint")
        // Four failures from this address within the window: the next attempt waits.
        _ = try Self.device(["enroll", url, "2345-6789-ABCE", issued.fingerprint, authorities.path("z")], in: authorities)
        let throttled = try Self.device(["enroll", url, issued.code, issued.fingerprint, authorities.path("w")], in: authorities)
        #expect(throttled.status == 429 && throttled.body["error"] as? String == "throttled", "\(throttled)")

        for (name, count) in [
            ("enroll_accepted_total", 1.0), ("enroll_refused_used_code_total", 1), ("enroll_refused_unknown_code_total", 2),
            ("enroll_refused_expired_code_total", 1), ("enroll_throttled_total", 1),
        ] {
            #expect(try MetricsExposition.pluginMetric(name, instance: "realm", admin: admin) == count, "\(name)")
        }
        #expect(router.logged("enroll: refused 127.0.0.1: the code was already used at"))
        #expect(peer.stop() == 0)
        #expect(router.stop() == 0)
    }

    @Test func aRevokedDeviceCannotRenewNorJoinAgain() async throws {
        let (authorities, home) = try Self.realm(domain: 139)
        var (sandbox, router, endpoints) = try await Self.authorityRouter(home: home)
        var url = String(endpoints.split(separator: "|")[1])
        var devices: [String] = []
        for name in ["kept", "revoked"] {
            let issued = try Self.code(home, in: authorities)
            let directory = authorities.path(name)
            let answer = try Self.device(["enroll", url, issued.code, issued.fingerprint, directory], in: authorities)
            #expect(answer.status == 200, "\(answer.body)")
            devices.append(answer.body["device"] as? String ?? "")
        }
        // A member renews its lease while it is one.
        let renewed = try Self.device(["renew", url, authorities.path("revoked")], in: authorities)
        #expect(renewed.status == 200, "\(renewed.body)")

        let revoke = try RouterProcess.runToExit(
            ["--plugins", authorities.plugins.path, "qeo", "realm", "revoke", home, devices[1]], in: authorities.root)
        #expect(revoke.status == 0, "\(revoke.errors)")
        #expect(revoke.output.contains("revoked device 3 (phone) of user 1"), "\(revoke.output)")
        let refused = try Self.device(["renew", url, authorities.path("revoked")], in: authorities)
        #expect(refused.status == 403 && refused.body["error"] as? String == "revoked", "\(refused)")

        // The authority's router loads the revocation list when its participant starts: after a
        // restart the revoked device's messages no longer arrive, the kept device's do.
        #expect(router.stop() == 0)
        (sandbox, router, endpoints) = try await Self.authorityRouter(home: home)
        url = String(endpoints.split(separator: "|")[1])
        let (_, kept) = try await QeoRealmTests.router("kept", credentials: authorities.path("kept"))
        let (_, revoked) = try await QeoRealmTests.router("revoked", credentials: authorities.path("revoked"))
        QeoRealmTests.deliver("first", from: kept, as: "kept", to: sandbox)
        for _ in 0..<5 { revoked.send("should not arrive\n") }
        QeoRealmTests.deliver("after", from: kept, as: "kept", to: sandbox)
        let messages = QeoRealmTests.messages(sandbox)
        #expect(messages.contains("kept: after"))
        #expect(!messages.contains { $0.hasPrefix("revoked:") }, "\(messages)")
        for process in [kept, revoked, router] { #expect(process.stop() == 0) }
    }

    @Test func aWatchedStateChangeWakesTheMemberOnceAndTheFeedCoalesces() async throws {
        let (authorities, home) = try Self.realm(domain: 140)
        let endpoint = try FCMEndpoint(in: authorities)
        defer { endpoint.stop() }
        let topic = "org.qeo.sample.simplechat.ChatParticipant"
        let (_, router, endpoints) = try await Self.authorityRouter(
            home: home, wake: topic, read: [topic], qdm: [Self.participant],
            extraInstances: """
                  push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: secret }, registry: "\(authorities.path("tokens.db"))",
                          fcm: { service_account: "\(endpoint.serviceAccountFile)", base_url: "\(endpoint.baseURL)" } }
                """,
            extraRoutes: """
                  - { from: realm.wakes, to: push.send, map: { user: "{{body.user}}", data: { cursor: "{{body.cursor}}" } } }
                """)
        let url = String(endpoints.split(separator: "|")[1])
        let webhook = try #require(PushRouter.webhookURL(of: router))
        let registered = try HTTPExchange.send(
            webhook + "/v1/tokens", method: "POST", headers: ["Authorization": "Bearer secret", "Content-Type": "application/json"],
            body: #"{"token": "alice-phone", "user": "1"}"#)
        #expect(registered.status == 201, "\(registered.body)")
        let issued = try Self.code(home, in: authorities)
        let phone = authorities.path("phone")
        #expect(try Self.device(["enroll", url, issued.code, issued.fingerprint, phone], in: authorities).status == 200)

        // A router on the phone's credentials writes bob's state: one wake, one FCM send.
        let writer = try Sandbox(plugins: ["core", "qeo"])
        try writer.writeRoutes(
            """
            instances:
              realm: { plugin: qeo, qdm: \(Self.participant), security: \(phone), write: [\(topic)] }
              in: { plugin: core, console: {} }
            routes:
              - { from: in.lines, when: 'body != "leave"', type: qeo.\(topic), map: { name: bob, state: "{{body}}" }, to: realm.write }
              - from: in.lines
                when: 'body == "leave"'
                type: qeo.Remove
                map: { type: \(topic), key: { name: bob } }
                to: realm.write
            """)
        let (bob, _) = try await RouterProcess.startWithAdmin(writer, environment: ["CYCLONEDDS_URI": QeoTests.loopback])
        bob.send("BUSY\n")
        await router.waitUntil("one FCM send", timeout: .seconds(30)) { (try? endpoint.sends().count) ?? 0 >= 1 }
        let sends = try endpoint.sends()
        #expect(sends.count == 1)
        #expect(sends.first?.message?["token"] as? String == "alice-phone")
        let data = try #require(sends.first?.message?["data"] as? [String: String])
        #expect(Set(data.keys) == ["cursor"], "data-only, nothing but the cursor: \(data)")
        let cursor = try #require(Int(data["cursor"] ?? ""))

        // Two more changes and a removal of the same instance: the feed keeps the latest.
        let first = try Self.device(["changes", url, phone, "0"], in: authorities)
        #expect(first.status == 200)
        let changes = try #require(first.body["changes"] as? [[String: Any]])
        #expect(changes.count == 1)
        #expect(changes.first?["value"] as? [String: String] == ["name": "bob", "state": "BUSY"])
        #expect(first.body["cursor"] as? Int == cursor)
        bob.send("IDLE\n")
        bob.send("AWAY\n")
        await router.waitUntil("three sends") { (try? endpoint.sends().count) ?? 0 >= 3 }
        let coalesced = try Self.device(["changes", url, phone, String(cursor)], in: authorities)
        let latest = try #require(coalesced.body["changes"] as? [[String: Any]])
        #expect(latest.count == 1, "\(latest)")
        #expect(latest.first?["value"] as? [String: String] == ["name": "bob", "state": "AWAY"])
        #expect(latest.first?["key"] as? [String: String] == ["name": "bob"])
        bob.send("leave\n")
        await router.waitUntil("a fourth send") { (try? endpoint.sends().count) ?? 0 >= 4 }
        let removed = try Self.device(["changes", url, phone, String(coalesced.body["cursor"] as? Int ?? 0)], in: authorities)
        let removal = try #require((removed.body["changes"] as? [[String: Any]])?.first)
        #expect(removal["removed"] as? Bool == true)
        #expect(removal["value"] is NSNull)
        #expect(removed.body["reset"] as? Bool == false)
        // Without the device's certificate, no feed.
        #expect(bob.stop() == 0)
        #expect(router.stop() == 0)
    }
}
