import Foundation
import Testing

@testable import IntegrationSupport

/// The admin HTTP port of a running router.
@Suite(.timeLimit(.minutes(2)))
struct AdminTests {
    /// One HTTP exchange, bounded.
    private static func request(
        _ url: String, method: String = "GET", token: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (status: Int, body: String) {
        let answer = try HTTPExchange.send(
            url, method: method, headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], sourceLocation: sourceLocation)
        return (answer.status, answer.body)
    }

    private static func start(_ sandbox: Sandbox, environment: [String: String] = [:]) async throws -> (RouterProcess, String) {
        let (router, address) = try await RouterProcess.startWithAdmin(
            sandbox, extra: ["--spool", sandbox.path("spool.db")], environment: environment)
        return (router, "http://" + address)
    }

    /// The value of the sample line `name{labels}` in a Prometheus exposition.
    private static func sample(_ line: String, in metrics: String) -> Double? { MetricsExposition.sample(line, in: metrics) }

    @Test func metricsHealthAndTheAPIAfterAKnownWorkload() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              source: { plugin: testkit, numbers: { count: 50, state: "\(sandbox.path("source.state"))" } }
              sink:   { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", fail_first: 1 } }
            routes:
              - name: durable
                from: source.numbers
                to: sink.collect
                delivery: at-least-once
                retry: { attempts: 3, backoff: 5ms, max_backoff: 10ms }
            """
        )
        let (router, base) = try await Self.start(sandbox)
        await router.waitUntil("50 envelopes collected") { sandbox.lines(of: "collected.txt").count >= 50 }
        #expect(try Self.request(base + "/healthz") == (200, "ok\n"))
        #expect(try Self.request(base + "/readyz") == (200, "ready\n"))

        var metrics = ""
        await router.waitUntil("the last acknowledgement counted") {
            metrics = (try? Self.request(base + "/metrics"))?.body ?? ""
            return Self.sample("switchyard_route_delivered_total{route=\"durable\"}", in: metrics) == 50
        }
        #expect(Self.sample("switchyard_route_received_total{route=\"durable\"}", in: metrics) == 50, "\(metrics)")
        #expect(Self.sample("switchyard_route_spooled_total{route=\"durable\"}", in: metrics) == 50)
        #expect(Self.sample("switchyard_route_retried_total{route=\"durable\"}", in: metrics) == 50)
        // Each envelope was sent twice: the first attempt failed, the second was delivered.
        #expect(Self.sample("switchyard_route_sent_total{route=\"durable\"}", in: metrics) == 100)
        #expect(Self.sample("switchyard_route_failed_total{route=\"durable\"}", in: metrics) == 50)
        #expect(Self.sample("switchyard_route_dead_lettered_total{route=\"durable\"}", in: metrics) == 0)
        #expect(Self.sample("switchyard_route_queue_depth{route=\"durable\"}", in: metrics) == 0)
        #expect(Self.sample("switchyard_instance_emitted_total{instance=\"source\"}", in: metrics) == 50)
        #expect(Self.sample("switchyard_instance_failed_total{instance=\"sink\"}", in: metrics) == 50)
        #expect(Self.sample("switchyard_instance_ready{instance=\"sink\"}", in: metrics) == 1)
        #expect(
            Self.sample("switchyard_port_envelopes_total{instance=\"source\",port=\"numbers\",direction=\"source\"}", in: metrics) == 50)
        #expect(
            Self.sample("switchyard_port_envelopes_total{instance=\"sink\",port=\"collect\",direction=\"sink\"}", in: metrics) == 100)
        #expect(Self.sample("switchyard_ack_latency_seconds_count{route=\"durable\"}", in: metrics) == 100)
        #expect(metrics.contains("# TYPE switchyard_ack_latency_seconds histogram"))
        // Every series the router declares says what it counts (RouterMetricsFactory gives the help text).
        for series in ["switchyard_route_received_total", "switchyard_ack_latency_seconds"] {
            let help = metrics.split(separator: "\n").first { $0.hasPrefix("# HELP \(series) ") }
            #expect((help?.count ?? 0) > "# HELP \(series) ".count + 10, "no help text for \(series)")
        }
        // Emit → ok, retries included, sampled one envelope in flight at a time.
        #expect((Self.sample("switchyard_route_latency_seconds_count{route=\"durable\"}", in: metrics) ?? 0) >= 1)
        #expect(metrics.contains("switchyard_route_latency_seconds_bucket{route=\"durable\",le=\"0.00005\"}"))
        #expect(metrics.contains("switchyard_plugin_info{plugin=\"testkit\",version=\"1.0.0\",abi=\"2\""))
        // A second scrape adds nothing: counters are not counted twice.
        let again = try Self.request(base + "/metrics").body
        #expect(Self.sample("switchyard_route_received_total{route=\"durable\"}", in: again) == 50)

        let routes = try Self.request(base + "/v1/routes")
        #expect(routes.status == 200)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(routes.body.utf8)) as? [[String: Any]])
        #expect(list.first?["name"] as? String == "durable")
        #expect(list.first?["delivered"] as? Int == 50)
        #expect(list.first?["failed"] as? Int == 50)
        #expect(try Self.request(base + "/v1/dead-letters") == (200, "[]"))
        #expect(try Self.request(base + "/v1/dead-letters/7").status == 404)
        #expect(try Self.request(base + "/nope").status == 404)
        #expect(router.stop() == 0)
    }

    @Test func aTokenGuardsEverythingButHealth() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            admin: { token: "${ADMIN_SECRET}" }
            instances:
              clock: { plugin: core, timer: { interval: 1h } }
              out:   { plugin: core, console: {} }
            routes:
              - { from: clock.tick, to: out.print }
            """
        )
        let (router, base) = try await Self.start(sandbox, environment: ["ADMIN_SECRET": "s3cret-token"])
        #expect(try Self.request(base + "/healthz").status == 200)
        let refused = try Self.request(base + "/metrics")
        #expect(refused.status == 401)
        #expect(!refused.body.contains("switchyard_"))
        #expect(try Self.request(base + "/readyz", token: "wrong").status == 401)
        #expect(try Self.request(base + "/readyz", token: "s3cret-token") == (200, "ready\n"))
        #expect(try Self.request(base + "/metrics", token: "s3cret-token").body.contains("switchyard_instance_ready"))
        // The commands that ask the router take --token as reload does.
        let address = String(base.dropFirst("http://".count))
        let top = try RouterProcess.runToExit(
            ["top", "--admin", address, "--token", "s3cret-token", "--iterations", "1"], in: sandbox.root,
            environment: ["SWITCHYARD_ADMIN_TOKEN": ""])
        #expect(top.status == 0, "\(top.errors)")
        let untokened = try RouterProcess.runToExit(
            ["iiidea", "list", "--admin", address], in: sandbox.root, environment: ["SWITCHYARD_ADMIN_TOKEN": ""])
        #expect(untokened.status == 1)
        let iiideas = try RouterProcess.runToExit(
            ["iiidea", "list", "--admin", address, "--token", "s3cret-token"], in: sandbox.root, environment: ["SWITCHYARD_ADMIN_TOKEN": ""]
        )
        #expect(iiideas.status == 0, "\(iiideas.errors)")
        // An open event stream (tap) does not hold the stop, and the admin port stops gracefully:
        // a cancelled server used to log "error … Waiting on child channel: CancellationError()".
        let tap = try RouterProcess(["tap", "clock.tick", "--admin", address, "--token", "s3cret-token"], in: sandbox.root)
        defer { _ = tap.stop() }
        #expect(router.stop() == 0)
        #expect(!router.standardError.contains("Waiting on child channel"), "\(router.standardError)")
        #expect(!router.standardError.contains(" error "), "\(router.standardError)")
        #expect(!router.standardError.contains("s3cret-token"))
    }

    /// Slow-loris on the admin port: 105 connections from seven addresses, each sending half a
    /// request head and then nothing, against its 64 slots; /healthz keeps answering, and the
    /// guard's evictions are counted.
    @Test func slowClientsDoNotStarveTheAdminPort() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes("instances:\n  clock: { plugin: core, timer: { interval: 1h } }\n")
        let (router, base) = try await Self.start(sandbox)
        let port = Int(base.split(separator: ":").last ?? "") ?? -1
        var slow = try RawSocket.slowHeads(105, port: port, addresses: 7, head: "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        await router.waitUntil("every slow connection seen") {
            let metrics = (try? Self.request(base + "/metrics"))?.body ?? ""
            return (Self.sample("switchyard_admin_connections_evicted_total", in: metrics) ?? 0) >= 30
        }
        for _ in 0..<10 { #expect(try Self.request(base + "/healthz") == (200, "ok\n")) }
        slow.removeAll()
        #expect(router.stop() == 0)
    }

    /// `admin.max_connections`, `max_connections_per_peer` and `header_timeout` set the guard.
    @Test func theAdminGuardTakesItsLimitsFromTheRouteFile() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            admin: { max_connections: 8, max_connections_per_peer: 2, header_timeout: 400ms }
            instances:
              clock: { plugin: core, timer: { interval: 1h } }
            """)
        let (router, base) = try await Self.start(sandbox)
        let port = Int(base.split(separator: ":").last ?? "") ?? -1
        let held = try (0..<2).map { _ in try RawSocket(port: port, from: "127.0.0.2") }
        let third = try RawSocket(port: port, from: "127.0.0.2")
        #expect(third.readToEnd().hasPrefix("HTTP/1.1 503"), "a third connection from one address was not refused")
        // The held ones sent nothing: each is answered 408 once its head is 400 ms late.
        for connection in held { #expect(connection.readToEnd().hasPrefix("HTTP/1.1 408")) }
        await router.waitUntil("the timeouts logged") {
            router.standardError.contains("no complete request head within 0.4s (header_timeout)")
        }
        #expect(try Self.request(base + "/healthz") == (200, "ok\n"))
        #expect(router.stop() == 0)
    }

    @Test func readinessFollowsTheBrokerConnection() async throws {
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("mqtt")
        try sandbox.writeRoutes(
            """
            instances:
              broker:
                plugin: mqtt
                url: "\(broker.url)"
                client_id: readiness-test
                reconnect: { initial_delay: 50ms, max_delay: 200ms }
                subscriptions: [ { topic: "a/#", qos: 1 } ]
              out: { plugin: core, console: {} }
            routes:
              - { from: broker.messages, to: out.print }
            """
        )
        let (router, base) = try await Self.start(sandbox)
        await router.waitUntil("ready") { (try? Self.request(base + "/readyz"))?.status == 200 }
        broker.stop()
        await router.waitUntil("not ready after the broker went away") {
            let (status, body) = (try? Self.request(base + "/readyz")) ?? (0, "")
            return status == 503 && body.hasPrefix("not ready: broker\nbroker: ")
        }
        #expect(
            Self.sample("switchyard_instance_ready{instance=\"broker\"}", in: try Self.request(base + "/metrics").body) == 0)
        try broker.restart()
        await router.waitUntil("ready again after the reconnect") { (try? Self.request(base + "/readyz"))?.status == 200 }
        #expect(router.stop() == 0)
    }
}

/// The admin port with default settings cannot be reached or driven from elsewhere.
@Suite(.timeLimit(.minutes(2)))
struct AdminSafetyTests {
    private static let routes = """
        instances:
          clock: { plugin: core, timer: { interval: 1h } }
          out:   { plugin: core, console: {} }
        routes:
          - from: clock.tick
            to: out.print
        """

    @Test func aNetworkAddressWithoutATokenIsRefusedAtStart() throws {
        let sandbox = try Sandbox(plugins: ["core"])
        try sandbox.writeRoutes(Self.routes)
        let refused = try RouterProcess.runToExit(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--admin", "0.0.0.0:0"], in: sandbox.root)
        #expect(refused.status == 1)
        #expect(refused.errors.contains("admin.token"), "\(refused.errors)")
        #expect(refused.errors.contains("0.0.0.0"))
    }

    @Test func aNetworkAddressWithATokenServes() async throws {
        let sandbox = try Sandbox(plugins: ["core"])
        try sandbox.writeRoutes(Self.routes)
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path, "--admin", "0.0.0.0:0"], in: sandbox.root,
            environment: ["SWITCHYARD_ADMIN_TOKEN": "network-token"])
        await router.waitUntil("the admin port to listen") { router.adminAddress != nil }
        let port = try #require(router.adminAddress?.split(separator: ":").last.flatMap { Int($0) })
        #expect(try RawSocket.http(port: port, "GET", "/readyz", headers: ["Host": "127.0.0.1"]).status == 401)
        let answer = try RawSocket.http(
            port: port, "GET", "/readyz", headers: ["Host": "127.0.0.1", "Authorization": "Bearer network-token"])
        #expect(answer.status == 200)
        #expect(router.stop() == 0)
    }

    @Test func foreignHostNamesAndCrossSiteChangesAreRefused() async throws {
        let sandbox = try Sandbox(plugins: ["core"])
        try sandbox.writeRoutes(
            Self.routes + "\n    delivery: at-least-once\nadmin: { allowed_hosts: [router.example.net] }\n")
        let (router, address) = try await RouterProcess.startWithAdmin(sandbox, extra: ["--spool", sandbox.path("spool.db")])
        let port = try #require(address.split(separator: ":").last.flatMap { Int($0) })
        // DNS rebinding: the attacker's page sends its own name.
        let rebound = try RawSocket.http(port: port, "GET", "/v1/routes", headers: ["Host": "attacker.example:\(port)"])
        #expect(rebound.status == 421, "\(rebound.text)")
        #expect(!rebound.text.contains("clock"))
        #expect(try RawSocket.http(port: port, "GET", "/v1/routes", headers: ["Host": "localhost:\(port)"]).status == 200)
        #expect(try RawSocket.http(port: port, "GET", "/v1/routes", headers: ["Host": "[::1]:\(port)"]).status == 200)
        #expect(try RawSocket.http(port: port, "GET", "/v1/routes", headers: ["Host": "router.example.net"]).status == 200)
        // A page elsewhere posting to the router on the visitor's machine.
        let forged = try RawSocket.http(
            port: port, "POST", "/v1/dead-letters/replay", headers: ["Host": "127.0.0.1:\(port)", "Origin": "https://evil.example"])
        #expect(forged.status == 403, "\(forged.text)")
        let fetched = try RawSocket.http(
            port: port, "POST", "/v1/dead-letters/drop", headers: ["Host": "127.0.0.1:\(port)", "Sec-Fetch-Site": "cross-site"])
        #expect(fetched.status == 403)
        // The CLI and curl send no Origin: allowed. Changes are POSTs; DELETE is gone.
        #expect(try RawSocket.http(port: port, "POST", "/v1/dead-letters/drop", headers: ["Host": "127.0.0.1:\(port)"]).status == 200)
        #expect(try RawSocket.http(port: port, "DELETE", "/v1/dead-letters", headers: ["Host": "127.0.0.1:\(port)"]).status != 200)
        #expect(router.stop() == 0)
    }
}
