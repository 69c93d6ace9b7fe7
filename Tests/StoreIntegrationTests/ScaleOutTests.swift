import Foundation
import SwitchyardSQLite
import Testing

@testable import IntegrationSupport

/// Several routers running the same routes act as one (issue 25, first part): with `share:`,
/// an mqtt instance's subscriptions join one shared group (`$share/switchyard-<instance>/…`,
/// MQTT 5) and each router takes a client id of its own, so Mosquitto hands every message to
/// one router.
@Suite(.timeLimit(.minutes(2)))
struct ScaleOutTests {
    /// The same routes in a sandbox of the router's own: `broker.messages` to `out.jsonl`.
    static func router(broker: Mosquitto) throws -> (RouterProcess, Sandbox) {
        let sandbox = try MQTTRouter.sandbox()
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                share: true
                subscriptions: [ { topic: "jobs/#", qos: 1 } ]
              out: { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
            routes:
              - { name: jobs, from: broker.messages, to: out.write }
            """)
        return (try MQTTRouter.run(sandbox), sandbox)
    }

    @Test func twoRoutersWithTheSameRoutesHandleEachMessageOnce() async throws {
        let broker = try Mosquitto()
        let (first, firstSandbox) = try Self.router(broker: broker)
        let (second, secondSandbox) = try Self.router(broker: broker)
        // Both subscribed, each with a client id of its own, to the group derived from the instance.
        let subscribed = broker.waitForLog("$share/switchyard-broker/jobs/# (QoS 1)", count: 2, timeout: .seconds(15))
        try #require(subscribed, "\(broker.logText)\n\(first.standardError)\n\(second.standardError)")
        #expect(broker.occurrences(of: "as switchyard-broker-") >= 2, "\(broker.logText)")

        let jobs = 40
        for job in 1...jobs { try broker.publish(topic: "jobs/\(job)", message: "job \(job)", qos: 1) }
        await first.waitUntil("\(jobs) jobs in the two files", timeout: .seconds(30)) {
            firstSandbox.lines(of: "out.jsonl").count + secondSandbox.lines(of: "out.jsonl").count >= jobs
        }
        #expect(first.stop() == 0, "\(first.standardError)")
        #expect(second.stop() == 0, "\(second.standardError)")
        let handled = (try firstSandbox.jsonLines(of: "out.jsonl") + secondSandbox.jsonLines(of: "out.jsonl")).compactMap {
            $0["body"] as? String
        }
        #expect(handled.count == jobs && Set(handled) == Set((1...jobs).map { "job \($0)" }), "\(handled.sorted())")
        #expect(!firstSandbox.lines(of: "out.jsonl").isEmpty && !secondSandbox.lines(of: "out.jsonl").isEmpty)
    }

    /// Failover without loss on an at-least-once MQTT → push path, with Mosquitto 2.0.11, which
    /// never hands a dead member's messages to the rest of its group
    /// (docs/notes/mosquitto-shared-subscriptions.md): each router has a stable client id and a
    /// session that outlives a restart, so the router killed mid-stream gets back, under its id,
    /// what it had not acknowledged and what was queued for it while it was down; what it had
    /// acknowledged was in its spool, sent after the restart. Every job reaches the FCM
    /// endpoint; duplicates are allowed (at least once), losses are not.
    @Test func aRouterKilledMidStreamAndRestartedUnderItsIdLosesNothing() async throws {
        let broker = try Mosquitto()
        let fcmSandbox = try Sandbox()
        let endpoint = try FCMEndpoint(in: fcmSandbox)
        defer { endpoint.stop() }
        func routes(_ sandbox: Sandbox) throws {
            try sandbox.installPlugin("push")
            try sandbox.writeRoutes(
                """
                spool: { path: "\(sandbox.path("state/spool.db"))" }
                instances:
                  broker:
                    plugin: mqtt
                    url: "\(broker.url)"
                    share: true
                    client_id: "bridge-${NODE}"
                    clean_start: false
                    session_expiry: 300
                    subscriptions: [ { topic: "jobs/#", qos: 1 } ]
                  push:
                    plugin: push
                    fcm: { service_account: "\(endpoint.serviceAccountFile)", base_url: "\(endpoint.baseURL)" }
                routes:
                  - name: jobs
                    from: broker.messages
                    map: { token: "device-1", data: { job: "{{body}}", node: "${NODE}" } }
                    to: push.send
                    delivery: at-least-once
                """)
        }
        let (victimSandbox, survivorSandbox) = (try MQTTRouter.sandbox(), try MQTTRouter.sandbox())
        try routes(victimSandbox)
        try routes(survivorSandbox)
        var victim = try MQTTRouter.run(victimSandbox, environment: ["NODE": "a"])
        let survivor = try MQTTRouter.run(survivorSandbox, environment: ["NODE": "b"])
        let subscribed = broker.waitForLog("$share/switchyard-broker/jobs/# (QoS 1)", count: 2, timeout: .seconds(15))
        try #require(subscribed, "\(broker.logText)\n\(victim.standardError)\n\(survivor.standardError)")

        /// The jobs the endpoint accepted, and by which router.
        func sent() -> [(job: String, node: String)] {
            ((try? endpoint.sends()) ?? []).filter { $0.verdict == "ok" }.compactMap { seen in
                guard let data = seen.message?["data"] as? [String: String], let job = data["job"], let node = data["node"] else {
                    return nil
                }
                return (job, node)
            }
        }
        let jobs = 120
        for job in 1...40 { try broker.publish(topic: "jobs/\(job)", message: "job \(job)", qos: 1) }
        await survivor.waitUntil("the victim to have sent some") { sent().filter { $0.node == "a" }.count >= 5 }
        _ = victim.stop(signal: SIGKILL)
        #expect(victim.process.terminationReason == .uncaughtSignal, "killed, not stopped: no DISCONNECT, no drain")
        let beforeTheKill = sent().filter { $0.node == "a" }.count
        // While it is down, the broker queues the victim's share for its session.
        for job in 41...jobs { try broker.publish(topic: "jobs/\(job)", message: "job \(job)", qos: 1) }
        victim = try MQTTRouter.run(victimSandbox, environment: ["NODE": "a"])
        await survivor.waitUntil("every job sent", timeout: .seconds(30)) { Set(sent().map(\.job)).count >= jobs }
        let missing = Set((1...jobs).map { "job \($0)" }).subtracting(sent().map(\.job))
        #expect(missing.isEmpty, "lost: \(missing.sorted())\n\(victim.standardError)")
        // What the broker kept for the victim's session while it was down came back to it
        // under its id (the survivor never gets a dead member's share from Mosquitto 2.0.11).
        #expect(sent().filter { $0.node == "a" }.count > beforeTheKill, "\(victim.standardError)")
        #expect(victim.stop() == 0, "\(victim.standardError)")
        #expect(survivor.stop() == 0, "\(survivor.standardError)")
    }

    /// With `store.url`, plugin state lives in PostgreSQL: what one router's instance stored,
    /// another router's instance of the same name reads, and nothing goes to either spool.
    @Test func routersOnOneDatabaseShareTheirPluginsState() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        func check(in sandbox: Sandbox) async throws -> [String: String] {
            try sandbox.installPlugin("testkit")
            try sandbox.writeRoutes(
                """
                spool: { path: "\(sandbox.path("state/spool.db"))" }
                store: { url: "${STORE_URL}" }
                instances:
                  shared: { plugin: testkit, state_check: { path: "\(sandbox.path("check.txt"))" } }
                """)
            let router = try RouterProcess(
                ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root, environment: ["STORE_URL": server.url])
            var text = ""
            await router.waitUntil("the state check's answers") {
                text = (try? String(contentsOfFile: sandbox.path("check.txt"), encoding: .utf8)) ?? ""
                return text.hasSuffix("done\n")
            }
            #expect(router.stop() == 0, "\(router.standardError)")
            #expect(!router.standardError.contains(server.password))
            #expect(router.logged("store open"), "\(router.standardError)")
            return Dictionary(
                text.split(separator: "\n").compactMap { line in
                    line.firstIndex(of: "=").map { (String(line[..<$0]), String(line[line.index(after: $0)...])) }
                }
            ) { first, _ in first }
        }
        let first = try Sandbox()
        let firstAnswers = try await check(in: first)
        #expect(firstAnswers["persisted"] == "nil", "\(firstAnswers)")
        #expect(firstAnswers["put"] == "ok" && firstAnswers["scan"] == "a/1:one,a/2:two,a/3:", "\(firstAnswers)")
        #expect(firstAnswers["largest_value"] == "1048576", "\(firstAnswers)")
        let secondAnswers = try await check(in: try Sandbox())
        #expect(secondAnswers["persisted"] == "run", "what the first router stored: \(secondAnswers)")
        #expect(try server.psql("SELECT count(*) FROM plugin_state WHERE instance = 'shared'") == "5")
        let spool = try SQLiteDatabase(path: first.path("state/spool.db"), readOnly: true)
        #expect(try spool.prepare("SELECT count(*) FROM plugin_state").rows([]) { $0.int(0) } == [0])
    }

    /// With `store.url`, an iiidea disabled (or enabled) on one router is disabled (enabled) on
    /// every router of the database within a second (NOTIFY), and a router started later
    /// starts with the stored switch.
    @Test func anIiideaSwitchedOnOneRouterIsSwitchedOnTheOthers() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        func start() async throws -> (router: RouterProcess, admin: String, sandbox: Sandbox) {
            let sandbox = try Sandbox()
            try sandbox.installPlugin("core")
            try sandbox.writeRoutes(
                """
                spool: { path: "\(sandbox.path("state/spool.db"))" }
                store: { url: "${STORE_URL}" }
                instances:
                  clock: { plugin: core, timer: { interval: 100ms } }
                  out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
                iiideas:
                  - id: ticks
                    trigger: { port: clock.tick }
                    service: { piece: template, preferences: { text: "tick {{body.count}}" } }
                    action:  { port: out.write }
                """)
            let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["STORE_URL": server.url])
            return (router, admin, sandbox)
        }
        func state(_ node: (router: RouterProcess, admin: String, sandbox: Sandbox)) -> String {
            let result = try? RouterProcess.runToExit(["iiidea", "list", "--admin", node.admin], in: node.sandbox.root)
            return result?.output.split(separator: "\t").dropFirst().first.map(String.init) ?? "?"
        }
        func cli(_ node: (router: RouterProcess, admin: String, sandbox: Sandbox), _ arguments: [String]) throws -> String {
            try RouterProcess.runToExit(["iiidea"] + arguments + ["--admin", node.admin], in: node.sandbox.root).output
        }
        let first = try await start()
        let second = try await start()
        #expect(state(first) == "enabled" && state(second) == "enabled")

        #expect(try cli(first, ["disable", "ticks"]) == "disabled ticks\n")
        await second.router.waitUntil("the second router follows the disable", timeout: .seconds(2)) { state(second) == "disabled" }
        await second.router.waitUntil("the second router's pieces told") {
            second.router.standardError.contains("iiidea disabled") && second.router.standardError.contains("ticks")
        }
        #expect(try server.psql("SELECT enabled FROM iiidea_switches WHERE id = 'ticks'") == "f")
        // Their runs are in the store too: listed alike by either router, none in a spool.
        let kept = Int(try server.psql("SELECT count(*) FROM iiidea_runs WHERE iiidea_id = 'ticks'")) ?? 0
        #expect(kept > 0)
        let listed = try RouterProcess.runToExit(
            ["iiidea", "runs", "ticks", "--limit", "1000", "--admin", second.admin], in: second.sandbox.root
        ).output
        #expect(listed.split(separator: "\n").count >= kept, "\(listed)")
        let spool = try SQLiteDatabase(path: first.sandbox.path("state/spool.db"), readOnly: true)
        #expect(try spool.prepare("SELECT count(*) FROM iiidea_runs").rows([]) { $0.int(0) } == [0])

        #expect(try cli(second, ["enable", "ticks"]) == "enabled ticks\n")
        await first.router.waitUntil("the first router follows the enable", timeout: .seconds(2)) { state(first) == "enabled" }
        let mark = first.sandbox.lines(of: "out.jsonl").count
        await first.router.waitUntil("the first router runs it again") { first.sandbox.lines(of: "out.jsonl").count > mark }

        #expect(try cli(first, ["disable", "ticks"]) == "disabled ticks\n")
        let third = try await start()
        #expect(state(third) == "disabled", "a router started later takes the stored switch")

        // A reload cannot move a router to another store: it says so and keeps the one it has.
        let routes = try String(contentsOf: third.sandbox.routes.appendingPathComponent("main.yaml"), encoding: .utf8)
        try third.sandbox.writeRoutes(
            routes.replacingOccurrences(of: #"${STORE_URL}"#, with: "postgres://switchyard@127.0.0.1:1/elsewhere"))
        third.router.send(signal: SIGHUP)
        await third.router.waitUntil("the reload's warning") { third.router.standardError.contains("store.url changed") }
        #expect(try cli(third, ["enable", "ticks"]) == "enabled ticks\n")
        await first.router.waitUntil("the first router still follows the third") { state(first) == "enabled" }
        for node in [first, second, third] {
            #expect(node.router.stop() == 0, "\(node.router.standardError)")
            #expect(!node.router.standardError.contains(server.password))
        }
    }
}

/// examples/scale-out as its README runs it: Mosquitto, PostgreSQL and two routers, started and
/// stopped by its script.
@Suite(.timeLimit(.minutes(3)))
struct ScaleOutExampleTests {
    @Test func theScaleOutExampleSplitsTheJobsAndSharesTheSwitch() throws {
        let sandbox = try Sandbox()
        for plugin in ["core", "mqtt"] { try sandbox.installPlugin(plugin) }
        let script = BuildProducts.packageRoot.appendingPathComponent("examples/scale-out/run.sh").path
        let environment = ProcessInfo.processInfo.environment.merging([
            "SWITCHYARD": BuildProducts.switchyard.path, "PLUGINS": sandbox.plugins.path, "MESSAGES": "20",
        ]) { $1 }
        let result = try Tool.run("/bin/bash", [script], environment: environment, tie: .processGroup, timeout: .seconds(150))
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("together 20 of 20"), "\(result.output)")
        #expect(result.output.contains("router 2 says: disabled"), "\(result.output)")
        #expect(result.output.contains("was killed; router") && result.output.contains("took it over"), "\(result.output)")
        #expect(!result.output.contains("handled 0,"), "both routers took jobs: \(result.output)")
        let folder = result.output.split(separator: "\n").first { $0.hasPrefix("router 1: admin") }?.split(separator: " ").last
        #expect(folder.map { !FileManager.default.fileExists(atPath: String($0)) } == true, "the script removes its folder")
    }
}
