import Foundation
import Testing

@testable import IntegrationSupport

/// The push plugin through the router binary: the webhook with real HTTP requests (FCM's
/// request shape, signatures, replays, token registration) and the FCM HTTP v1 sender against
/// the local FCM endpoint, which verifies the service account's JWT.
@Suite(.timeLimit(.minutes(3)))
struct PushTests {
    static var sendPath: String { "/v1/projects/\(FCMEndpoint.project)/messages:send" }

    /// A plugin metric from the admin port's exposition.
    static func metric(_ name: String, admin: String) throws -> Double {
        try MetricsExposition.pluginMetric(name, instance: "push", admin: admin)
    }

    @Test func fcmShapedAndPlainRequestsBecomeDataMessages() async throws {
        let sandbox = try Sandbox()
        let (router, webhook, _) = try await PushRouter.startWebhookToFile(sandbox)
        let body =
            #"{"message": {"token": "device-token-1", "data": {"notification_id": "n1", "k": "v"}, "android": {"priority": "high"}}}"#
        let answer = try HTTPExchange.send(webhook + Self.sendPath, method: "POST", headers: PushRouter.signed(body), body: body)
        #expect(answer.status == 200, "\(answer.body)")
        let envelopes = try sandbox.jsonLines(of: "out.jsonl")
        // Answered only once the route took it: the envelope is already written.
        #expect(envelopes.count == 1)
        let envelope = try #require(envelopes.first)
        #expect(answer.json["name"] as? String == "projects/switchyard-test/messages/\(envelope["id"] as? String ?? "?")")
        #expect(envelope["type"] as? String == "push.DataMessage")
        #expect(envelope["subject"] as? String == "device-token-1")
        let message = try #require(envelope["body"] as? [String: Any])
        #expect(message["data"] as? [String: String] == ["notification_id": "n1", "k": "v"])
        #expect(message["notification_id"] as? String == "n1")
        #expect(message["project"] as? String == "switchyard-test")
        #expect((message["android"] as? [String: String]) == ["priority": "high"])

        let check = #"{"validate_only": true, "message": {"topic": "news", "data": {"a": "b"}}}"#
        let validated = try HTTPExchange.send(webhook + Self.sendPath, method: "POST", headers: PushRouter.signed(check), body: check)
        #expect(validated.status == 200)
        #expect(validated.json["name"] as? String == "projects/switchyard-test/messages/fake_message_id")

        let plain = #"{"topic": "news", "data": {"count": 5, "on": true}}"#
        let pushed = try HTTPExchange.send(webhook + "/push", method: "POST", headers: PushRouter.signed(plain), body: plain)
        #expect(pushed.status == 200, "\(pushed.body)")
        let all = try sandbox.jsonLines(of: "out.jsonl")
        #expect(all.count == 2, "validate_only emits nothing")
        #expect(pushed.json["id"] as? String == all.last?["id"] as? String)
        #expect((all.last?["body"] as? [String: Any])?["data"] as? [String: String] == ["count": "5", "on": "true"])
        #expect(router.stop() == 0)
    }

    @Test func unauthenticatedAndReplayedRequestsAreRefusedAndCounted() async throws {
        let sandbox = try Sandbox()
        let (router, webhook, admin) = try await PushRouter.startWebhookToFile(sandbox)
        let body = #"{"message": {"topic": "news", "data": {"a": "b"}}}"#
        let url = webhook + Self.sendPath
        var wrongSignature = PushRouter.signed(body)
        wrongSignature["webhook-signature"] = PushRouter.signed(body + " ")["webhook-signature"]
        let refusals: [(String, [String: String])] = [
            ("no bearer token", PushRouter.signed(body, bearer: nil)),
            ("a wrong bearer token", PushRouter.signed(body, bearer: "guess")),
            ("a signature over another body", wrongSignature),
            ("a timestamp 10 minutes old", PushRouter.signed(body, timestamp: Int(Date().timeIntervalSince1970) - 600)),
            ("no signature headers", ["Authorization": "Bearer \(PushRouter.bearer)", "Content-Type": "application/json"]),
        ]
        for (what, headers) in refusals {
            let answer = try HTTPExchange.send(url, method: "POST", headers: headers, body: body)
            #expect(answer.status == 401, "\(what): \(answer.body)")
            #expect((answer.json["error"] as? [String: Any])?["status"] as? String == "UNAUTHENTICATED", "\(what)")
        }
        let good = PushRouter.signed(body)
        #expect(try HTTPExchange.send(url, method: "POST", headers: good, body: body).status == 200)
        let replay = try HTTPExchange.send(url, method: "POST", headers: good, body: body)
        #expect(replay.status == 409, "\(replay.body)")
        #expect(sandbox.lines(of: "out.jsonl").count == 1, "only the good request is emitted")
        #expect(try Self.metric("webhook_unauthorized_total", admin: admin) == 5)
        #expect(try Self.metric("webhook_replayed_total", admin: admin) == 1)
        #expect(try Self.metric("webhook_accepted_total", admin: admin) == 1)
        #expect(router.occurrences(of: "refused POST \(Self.sendPath)") == 6)
        #expect(router.stop() == 0)
    }

    @Test func eachInvalidArgumentIsAnsweredAsFCMDoes() async throws {
        let sandbox = try Sandbox()
        let (router, webhook, admin) = try await PushRouter.startWebhookToFile(sandbox)
        let big = String(repeating: "x", count: 4100)
        let cases: [(String, String)] = [
            (#"{"message": {"token": "t", "data": {"n": 12}}}"#, "Invalid value at 'message.data[0].value' (TYPE_STRING), 12"),
            (#"{"message": {"data": {"a": "b"}}}"#, "Exactly one of token, topic, condition or fid must be specified (got none)"),
            (
                #"{"message": {"token": "t", "topic": "x"}}"#,
                "Exactly one of token, topic, condition or fid must be specified (got token, topic)"
            ),
            (
                #"{"message": {"token": "t", "data": {"google.sent_time": "1"}}}"#,
                "Invalid data payload key: \"google.sent_time\" is reserved"
            ),
            (#"{"message": {"token": "t", "data": {"from": "me"}}}"#, "Invalid data payload key: \"from\" is reserved"),
            (#"{"message": {"token": "t", "data": {"k": "\#(big)"}}}"#, "Message is too big: the payload is 4101 bytes, the limit is 4096"),
            (#"{"message": {"token": "t", "priority": "high"}}"#, "Unknown name \"priority\" at 'message'"),
            (#"{"message": "#, "Invalid JSON payload received."),
        ]
        for (body, message) in cases {
            let answer = try HTTPExchange.send(webhook + Self.sendPath, method: "POST", headers: PushRouter.signed(body), body: body)
            #expect(answer.status == 400, "\(body.prefix(60)): \(answer.body)")
            let error = try #require(answer.json["error"] as? [String: Any])
            #expect(error["status"] as? String == "INVALID_ARGUMENT")
            #expect(error["code"] as? Int == 400)
            #expect((error["message"] as? String)?.contains(message) == true, "\(error["message"] ?? "")")
            let details = error["details"] as? [[String: Any]] ?? []
            #expect(details.contains { $0["errorCode"] as? String == "INVALID_ARGUMENT" })
        }
        let otherProject = try HTTPExchange.send(
            webhook + "/v1/projects/elsewhere/messages:send", method: "POST", headers: PushRouter.signed(#"{"message":{"topic":"a"}}"#),
            body: #"{"message":{"topic":"a"}}"#)
        #expect(otherProject.status == 404)
        #expect(sandbox.lines(of: "out.jsonl").isEmpty)
        #expect(try Self.metric("webhook_invalid_total", admin: admin) == Double(cases.count + 1))
        #expect(router.stop() == 0)
    }

    @Test func appsRegisterAndDropTokensAndTheCLIListsThem() async throws {
        let sandbox = try Sandbox()
        let registry = sandbox.path("tokens.db")
        let (router, webhook, _) = try await PushRouter.start(
            sandbox, instances: PushRouter.webhookInstance.replacingOccurrences(of: "REGISTRY", with: registry), routes: "routes: []")
        let registration = #"{"token": "fcm-token-A", "device": "watch-1", "user": "u-7", "platform": "android"}"#
        let first = try HTTPExchange.send(
            webhook + "/v1/tokens", method: "POST", headers: PushRouter.signed(registration), body: registration)
        #expect(first.status == 201, "\(first.body)")
        #expect(first.json["new"] as? Bool == true)
        let again = try HTTPExchange.send(
            webhook + "/v1/tokens", method: "POST", headers: PushRouter.signed(registration), body: registration)
        #expect(again.status == 200)
        #expect(again.json["new"] as? Bool == false)
        let other = #"{"token": "fcm-token-B", "device": "phone-2"}"#
        #expect(try HTTPExchange.send(webhook + "/v1/tokens", method: "POST", headers: PushRouter.signed(other), body: other).status == 201)
        let unsigned = try HTTPExchange.send(
            webhook + "/v1/tokens", method: "POST", headers: ["Content-Type": "application/json"], body: #"{"token": "intruder"}"#)
        #expect(unsigned.status == 401)

        let listed = try HTTPExchange.send(webhook + "/v1/tokens?device=watch-1", headers: PushRouter.signed(""))
        #expect(listed.status == 200)
        let tokens = listed.json["tokens"] as? [[String: Any]] ?? []
        #expect(tokens.map { $0["token"] as? String } == ["fcm-token-A"])
        #expect(tokens.first?["user"] as? String == "u-7")

        let plugins = ["--plugins", sandbox.plugins.path]
        let cli = try RouterProcess.runToExit(plugins + ["push", "tokens", "list", "--registry", registry], in: sandbox.root)
        #expect(cli.status == 0, "\(cli.errors)")
        let rows = cli.output.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(Set(rows.map { $0.first ?? "" }) == ["fcm-token-A", "fcm-token-B"])
        #expect(rows.first { $0.first == "fcm-token-A" }?.prefix(4) == ["fcm-token-A", "watch-1", "u-7", "android"])

        let dropped = try HTTPExchange.send(webhook + "/v1/tokens/fcm-token-A", method: "DELETE", headers: PushRouter.signed(""))
        #expect(dropped.status == 200, "\(dropped.body)")
        #expect(try HTTPExchange.send(webhook + "/v1/tokens/fcm-token-A", method: "DELETE", headers: PushRouter.signed("")).status == 404)
        let cliDrop = try RouterProcess.runToExit(
            plugins + ["push", "tokens", "drop", "fcm-token-B", "--registry", registry], in: sandbox.root)
        #expect(cliDrop.status == 0, "\(cliDrop.errors)")
        #expect(cliDrop.output == "dropped fcm-token-B\n")
        let empty = try RouterProcess.runToExit(plugins + ["push", "tokens", "list", "--registry", registry, "--json"], in: sandbox.root)
        #expect(empty.status == 0, "\(empty.errors)")
        #expect(empty.output.isEmpty)
        #expect(router.stop() == 0)
    }

    /// A sender instance (with a webhook for token registration) fed from standard input over an
    /// at-least-once route.
    static func startSender(_ sandbox: Sandbox, endpoint: FCMEndpoint) async throws -> (router: RouterProcess, webhook: String) {
        let registry = sandbox.path("tokens.db")
        let (router, webhook, _) = try await PushRouter.start(
            sandbox,
            instances: """
                  in:   { plugin: core, console: {} }
                  push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "${PUSH_BEARER}" }, registry: "\(registry)",
                          fcm: { service_account: "\(endpoint.serviceAccountFile)", base_url: "\(endpoint.baseURL)", retry: { attempts: 3, backoff: 50ms } } }
                """,
            routes: """
                routes:
                  - { name: fcm, from: in.lines, to: push.send, delivery: at-least-once, retry: { attempts: 1 } }
                """)
        return (router, webhook)
    }

    static func deadLetters(_ sandbox: Sandbox) throws -> [[String: Any]] {
        let result = try RouterProcess.runToExit(["dlq", "list", "--json", "--spool", sandbox.path("spool.db")], in: sandbox.root)
        return result.output.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    @Test func theSenderSignsInWithTheServiceAccountAndSendsStringData() async throws {
        let sandbox = try Sandbox()
        let endpoint = try FCMEndpoint(in: sandbox)
        defer { endpoint.stop() }
        let (router, _) = try await Self.startSender(sandbox, endpoint: endpoint)
        router.send(#"{"token": "abc", "data": {"n": 1, "s": "x", "ok": true}}"# + "\n")
        router.send(#"{"message": {"topic": "news", "notification": {"title": "T", "body": "B"}}}"# + "\n")
        router.send(#"{"condition": "'a' in topics", "data": {"k": "v"}, "apns": {"headers": {"apns-priority": "5"}}}"# + "\n")
        await router.waitUntil("three messages at the FCM endpoint") { (try? endpoint.sends().count) == 3 }
        let log = try endpoint.log()
        #expect(log.filter { $0.kind == "token" }.map(\.verdict) == ["ok"], "one access token, verified, reused")
        let sends = log.filter { $0.kind == "send" }
        #expect(sends.map(\.verdict) == ["ok", "ok", "ok"])
        // Sends run side by side (FCM keeps no order either): find each by its target.
        let byToken = try #require(sends.first { $0.message?["token"] != nil }?.message)
        #expect(byToken["token"] as? String == "abc")
        #expect(byToken["data"] as? [String: String] == ["n": "1", "s": "x", "ok": "true"])
        let byTopic = try #require(sends.first { $0.message?["topic"] != nil }?.message)
        #expect(byTopic["topic"] as? String == "news")
        #expect(byTopic["notification"] as? [String: String] == ["title": "T", "body": "B"])
        let byCondition = try #require(sends.first { $0.message?["condition"] != nil }?.message)
        #expect(byCondition["condition"] as? String == "'a' in topics")
        #expect(byCondition["apns"] as? [String: [String: String]] == ["headers": ["apns-priority": "5"]])
        #expect(try Self.deadLetters(sandbox).isEmpty)
        #expect(router.stop() == 0)
    }

    @Test func fcmErrorsAreRetriedDeadLetteredOrDropTheToken() async throws {
        let sandbox = try Sandbox()
        let endpoint = try FCMEndpoint(in: sandbox)
        defer { endpoint.stop() }
        let (router, webhook) = try await Self.startSender(sandbox, endpoint: endpoint)
        let auth = ["Authorization": "Bearer \(PushRouter.bearer)", "Content-Type": "application/json"]

        // 429 with Retry-After: 1, then 503, then 200: delivered, no dead letter.
        try endpoint.script([["status": 429, "retry_after": 1], ["status": 503]])
        router.send(#"{"token": "abc", "data": {"try": "1"}}"# + "\n")
        await router.waitUntil("the third attempt") { (try? endpoint.sends().count) == 3 }
        var sends = try endpoint.sends()
        #expect(sends.map(\.verdict) == ["scripted 429", "scripted 503", "ok"])
        #expect(sends[1].at - sends[0].at >= 1.0, "Retry-After: 1 honoured")

        // INVALID_ARGUMENT from FCM: one attempt, dead-lettered with FCM's message.
        try endpoint.script([["status": 400, "message": "The registration token is not a valid FCM registration token"]])
        router.send(#"{"token": "garbled"}"# + "\n")
        await router.waitUntil("a dead letter") { (try? Self.deadLetters(sandbox).count) == 1 }
        sends = try endpoint.sends()
        #expect(sends.count == 4)
        #expect(
            try Self.deadLetters(sandbox).last?["error"] as? String ?? ""
                == "FCM: INVALID_ARGUMENT (HTTP 400): The registration token is not a valid FCM registration token")

        // What cannot be an FCM message is refused before sending.
        router.send(#"{"topic": "t", "data": {"nested": {"x": 1}}}"# + "\n")
        await router.waitUntil("a second dead letter") { (try? Self.deadLetters(sandbox).count) == 2 }
        #expect(
            (try Self.deadLetters(sandbox).last?["error"] as? String ?? "").contains("\"nested\" is an object, which has no string form"))
        #expect(try endpoint.sends().count == 4)

        // UNREGISTERED: the token leaves the registry; the device's other token still gets it.
        for token in ["dead-1", "live-1"] {
            let body = #"{"token": "\#(token)", "device": "watch-1"}"#
            #expect(try HTTPExchange.send(webhook + "/v1/tokens", method: "POST", headers: auth, body: body).status == 201)
        }
        router.send(#"{"device": "watch-1", "data": {"hello": "watch"}}"# + "\n")
        await router.waitUntil("both tokens tried") { (try? endpoint.sends().count) == 6 }
        // The endpoint logs a send before it answers; the router drops the token once it has the 404.
        await router.waitUntil("the dead token dropped") {
            let registered = try? HTTPExchange.send(webhook + "/v1/tokens?device=watch-1", headers: auth).json["tokens"] as? [[String: Any]]
            return registered?.map { $0["token"] as? String } == ["live-1"]
        }
        sends = try endpoint.sends()
        #expect(
            Set(sends.suffix(2).map { "\($0.message?["token"] as? String ?? "") \($0.verdict)" }) == ["dead-1 scripted 404", "live-1 ok"])

        // A single unregistered token: dead-lettered, not retried.
        router.send(#"{"token": "dead-2"}"# + "\n")
        await router.waitUntil("a third dead letter") { (try? Self.deadLetters(sandbox).count) == 3 }
        #expect((try Self.deadLetters(sandbox).last?["error"] as? String ?? "").contains("UNREGISTERED"))
        #expect(try endpoint.sends().count == 7)
        #expect(router.stop() == 0)
    }

    @Test func aDataMessageWithANotificationIdRunsThatIiidea() async throws {
        let sandbox = try Sandbox()
        let (router, webhook, _) = try await PushRouter.start(
            sandbox,
            instances: PushRouter.webhookInstance.replacingOccurrences(of: "REGISTRY", with: sandbox.path("tokens.db")) + """

                  clock: { plugin: core, timer: { interval: 1h } }
                  out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
                """,
            routes: """
                iiideas:
                  - id: note
                    trigger: { port: clock.tick }
                    service: { piece: template, preferences: { text: "remote {{body.count}}" } }
                    action:  { port: out.write }
                    remote:  { port: push.messages }
                """)
        let body = #"{"message": {"token": "phone", "data": {"notification_id": "note", "count": "42"}}}"#
        let answer = try HTTPExchange.send(webhook + Self.sendPath, method: "POST", headers: PushRouter.signed(body), body: body)
        #expect(answer.status == 200, "\(answer.body)")
        await router.waitUntil("the remote run's action") { !sandbox.lines(of: "out.jsonl").isEmpty }
        #expect(sandbox.lines(of: "out.jsonl") == [#"{"text":"remote 42"}"#])
        #expect(router.stop() == 0)
    }

    /// examples/push-webhook as its README runs it, with the README's openssl signing recipe.
    @Test func theExampleRunsWithTheReadmesSignedCurlRequest() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("push")
        let example = BuildProducts.packageRoot.appendingPathComponent("examples/push-webhook/routes.yaml")
        let yaml = try String(contentsOf: example, encoding: .utf8).replacingOccurrences(of: "127.0.0.1:8780", with: "127.0.0.1:0")
        try sandbox.writeRoutes(yaml)
        let secret = "whsec_c3dpdGNoeWFyZC1leGFtcGxlLXNlY3JldA=="
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--spool", sandbox.path("spool.db")], in: sandbox.root,
            environment: ["PUSH_BEARER": "app-secret", "PUSH_SECRET": secret])
        await router.waitUntil("the webhook to listen") { PushRouter.webhookURL(of: router) != nil }
        let url = try #require(PushRouter.webhookURL(of: router))
        let script = """
            set -euo pipefail
            body='{"message": {"token": "phone-token-1", "data": {"app": "watch", "notification_id": "morning", "text": "hello"}}}'
            id=msg-$(date +%s%N); ts=$(date +%s)
            key=$(printf %s "${PUSH_SECRET#whsec_}" | base64 -d | od -An -tx1 | tr -d ' \\n')
            sig=$(printf '%s.%s.%s' "$id" "$ts" "$body" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$key -binary | base64)
            curl -s "$URL/v1/projects/demo-project/messages:send" \\
              -H "Authorization: Bearer $PUSH_BEARER" -H 'Content-Type: application/json' \\
              -H "webhook-id: $id" -H "webhook-timestamp: $ts" -H "webhook-signature: v1,$sig" -d "$body"
            """
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/bin/bash")
        curl.arguments = ["-c", script]
        curl.environment = ["PUSH_SECRET": secret, "PUSH_BEARER": "app-secret", "URL": url, "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        curl.standardOutput = output
        try curl.run()
        curl.waitUntilExit()
        let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(answer.hasPrefix(#"{"name":"projects/demo-project/messages/"#), "\(answer)")
        // The webhook answers once the envelope is accepted; the journal route writes it after.
        // Beside the route file: relative paths in a route file are taken from its folder.
        await router.waitUntil("the journal line") { sandbox.lines(of: "routes/push-journal.jsonl").count >= 1 }
        let journal = try sandbox.jsonLines(of: "routes/push-journal.jsonl")
        #expect(journal.count == 1)
        #expect((journal.first?["body"] as? [String: Any])?["notification_id"] as? String == "morning")
        await router.waitUntil("the console route's print") { router.standardOutput.contains("phone-token-1") }
        #expect(router.stop() == 0)
    }

    @Test func theWebhookServesHTTPSWithTheConfiguredCertificate() async throws {
        let sandbox = try Sandbox()
        try TestCertificates.write(in: sandbox.root)
        let (router, webhook, _) = try await PushRouter.start(
            sandbox,
            instances: """
                  push: { plugin: push, listen: "127.0.0.1:0", tls: { cert_file: "\(sandbox.path("server.pem"))", key_file: "\(sandbox.path("server.key"))" }, auth: { bearer_token: "${PUSH_BEARER}" } }
                  out:  { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
                """,
            routes: "routes:\n  - { from: push.messages, to: out.write }")
        #expect(webhook.hasPrefix("https://127.0.0.1:"))
        let body = #"{"topic": "news", "data": {"a": "b"}}"#
        let verified = try Tool.run(
            "/usr/bin/curl",
            [
                "-sS", "--cacert", sandbox.path("ca.pem"), "-H", "Authorization: Bearer \(PushRouter.bearer)", "-H",
                "Content-Type: application/json",
                "-d", body, webhook + "/push",
            ])
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.hasPrefix(#"{"id":""#), "\(verified.output)")
        // Without the CA the certificate is not trusted: nothing reaches the router.
        let unverified = try Tool.run("/usr/bin/curl", ["-sS", "-d", body, webhook + "/push"])
        #expect(unverified.status != 0)
        #expect(sandbox.lines(of: "out.jsonl").count == 1)
        #expect(router.stop() == 0)
    }

    /// A 200 on an at-least-once route means the message is on disk: a crash right after it
    /// (kill -9, with the sink down) loses nothing.
    @Test func acceptedMessagesSurviveACrashOnAnAtLeastOnceRoute() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        let down = sandbox.path("sink-down")
        #expect(FileManager.default.createFile(atPath: down, contents: nil))
        let (router, webhook, _) = try await PushRouter.start(
            sandbox,
            instances: """
                  push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "${PUSH_BEARER}" } }
                  sink: { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", fail_while: "\(down)" } }
                """,
            routes: """
                routes:
                  - { from: push.messages, to: sink.collect, delivery: at-least-once, retry: { attempts: 1000, backoff: 20ms, max_backoff: 100ms } }
                """)
        var accepted: Set<String> = []
        for index in 0..<40 {
            let body = #"{"topic": "news", "data": {"n": "\#(index)"}}"#
            let answer = try HTTPExchange.send(
                webhook + "/push", method: "POST", headers: ["Authorization": "Bearer \(PushRouter.bearer)"], body: body)
            #expect(answer.status == 200, "\(answer.body)")
            if let id = answer.json["id"] as? String { accepted.insert(id) }
        }
        #expect(accepted.count == 40)
        #expect(sandbox.lines(of: "collected.txt").isEmpty, "the sink is down")
        router.stop(signal: SIGKILL)

        try FileManager.default.removeItem(atPath: down)
        let (restarted, _) = try await RouterProcess.startWithAdmin(
            sandbox, extra: ["--spool", sandbox.path("spool.db")], environment: ["PUSH_BEARER": PushRouter.bearer])
        await restarted.waitUntil("every accepted message delivered") {
            Set(sandbox.lines(of: "collected.txt").compactMap { $0.split(separator: " ").first.map(String.init) }).isSuperset(of: accepted)
        }
        #expect(restarted.stop() == 0)
    }

    /// A full route queue (`on_full: block`) turns into FCM's retryable 429 with Retry-After;
    /// every request answered 200 was delivered.
    @Test func aFullRouteQueueAnswers429WithRetryAfter() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        let (router, webhook, _) = try await PushRouter.start(
            sandbox,
            instances: """
                  push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "${PUSH_BEARER}" } }
                  sink: { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", delay_ms: 300, max_in_flight: 1 } }
                """,
            routes: """
                routes:
                  - { from: push.messages, to: sink.collect, queue: { size: 1, on_full: block } }
                """)
        // Eight requests at once, each answered "STATUS RETRY-AFTER ERROR-STATUS".
        let script = """
            for n in 1 2 3 4 5 6 7 8; do
              curl -s -o "$DIR/answer.$n" -w '%{http_code} %header{retry-after}\\n' -H "Authorization: Bearer $TOKEN" \\
                -d "{\\"topic\\": \\"news\\", \\"data\\": {\\"n\\": \\"$n\\"}}" "$URL/push" &
            done
            wait
            """
        let result = try Tool.run(
            "/usr/bin/env", ["DIR=\(sandbox.root.path)", "TOKEN=\(PushRouter.bearer)", "URL=\(webhook)", "bash", "-c", script])
        let answers = result.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(answers.count == 8, "\(result.output)")
        let ok = answers.filter { $0.first == "200" }
        let full = answers.filter { $0.first == "429" }
        #expect(ok.count + full.count == 8, "\(result.output)")
        #expect(!ok.isEmpty)
        #expect(!full.isEmpty, "eight requests at once cannot all fit a one-slot queue and a one-at-a-time sink")
        #expect(full.allSatisfy { $0.count == 2 && $0[1] == "1" }, "Retry-After: 1 on every 429: \(result.output)")
        let bodies = (1...8).compactMap { try? String(contentsOfFile: sandbox.path("answer.\($0)"), encoding: .utf8) }
        #expect(bodies.filter { $0.contains("RESOURCE_EXHAUSTED") }.count == full.count)
        #expect(sandbox.lines(of: "collected.txt").count == ok.count)
        #expect(router.stop() == 0)
    }
}
