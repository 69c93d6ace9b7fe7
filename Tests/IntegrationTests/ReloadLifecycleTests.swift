import Foundation
import Testing

@testable import IntegrationSupport

/// Reloads that change running instances, against the real listeners: a plugin that can adopt
/// the change keeps its socket (reconfigure); an instance that cannot start rolls the reload
/// back and the previous instances serve again; `POST /reload` and `switchyard reload` report
/// what happened.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ReloadLifecycleTests {
    // MARK: SIP

    private static func sipRoutes(_ sandbox: Sandbox, port: UInt16, peer: UInt16, displayName: String) -> String {
        """
        instances:
          pager:
            plugin: sip
            identity: { impu: "sip:alice@example.test", display_name: "\(displayName)" }
            listen: { host: 127.0.0.1, port: \(port) }
            send: { to: "sip:bob@127.0.0.1:\(peer)" }
          in: { plugin: core, console: {} }
          messages: { plugin: core, file: { path: "\(sandbox.path("messages.jsonl"))" } }
        routes:
          - { from: pager.messages, to: messages.write }
          - { from: in.lines, to: pager.send }
        """
    }

    /// A MESSAGE to `port` as a peer would send it.
    private static func message(to port: UInt16, branch: String, body: String) -> [UInt8] {
        let text =
            "MESSAGE sip:alice@127.0.0.1:\(port) SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:9;branch=\(branch)\r\n"
            + "From: <sip:bob@peer.test>;tag=\(branch)\r\nTo: <sip:alice@example.test>\r\nCall-ID: \(branch)\r\n"
            + "CSeq: 1 MESSAGE\r\nMax-Forwards: 70\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        return Array(text.utf8)
    }

    @Test func aChangedSIPDisplayNameIsAdoptedOnTheSamePort() async throws {
        let peer = try SIPScriptedPeer { request, _ in SIPScriptedPeer.response(to: request, "200 OK") }
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        let port = try LoopbackPort.freeForUDPAndTCP()
        try sandbox.writeRoutes(Self.sipRoutes(sandbox, port: port, peer: peer.port, displayName: "Alice Before"))
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox)
        router.send("one\n")
        let first = peer.waitForRequests(1)
        #expect(SIPScriptedPeer.header("From", in: first.first ?? "")?.contains("\"Alice Before\"") == true, "\(first)")

        try sandbox.writeRoutes(Self.sipRoutes(sandbox, port: port, peer: peer.port, displayName: "Alice After"))
        router.send(signal: SIGHUP)
        await router.waitUntil("the reload") { router.occurrences(of: "routes reloaded") == 1 }
        #expect(router.logged("reconfigured [\"pager\"], started [], stopped []"), "\(router.standardError)")

        router.send("two\n")
        let both = peer.waitForRequests(2)
        #expect(both.count == 2)
        #expect(SIPScriptedPeer.header("From", in: both.last ?? "")?.contains("\"Alice After\"") == true, "\(both)")
        // The same socket still takes MESSAGEs: answered and routed.
        let answer = try UDPExchange.send(Self.message(to: port, branch: "z9hG4bK-after-reload", body: "still here"), to: port)
        #expect(answer.hasPrefix("SIP/2.0 200 OK\r\n"), "\(answer)")
        await router.waitUntil("the MESSAGE routed") { sandbox.lines(of: "messages.jsonl").count == 1 }
        let log = router.standardError
        #expect(!log.contains("start failed"), "\(log)")
        #expect(!log.contains("Address already in use"), "\(log)")
        #expect(router.occurrences(of: "listening on 127.0.0.1:\(port)") == 1, "\(log)")
        #expect(router.stop() == 0)
    }

    /// A changed identity is adopted in place too, and registers again: the old binding is
    /// removed (Expires: 0) before the new identity registers.
    @Test func aChangedSIPIdentityRegistersAgainWithoutANewSocket() async throws {
        let registrar = try SIPScriptedPeer { request, _ in SIPScriptedPeer.response(to: request, "200 OK") }
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        let port = try LoopbackPort.freeForUDPAndTCP()
        func routes(_ user: String) -> String {
            """
            instances:
              pager:
                plugin: sip
                identity: { impu: "sip:\(user)@example.test", password: secret }
                listen: { host: 127.0.0.1, port: \(port) }
                register: { registrar: "sip:127.0.0.1:\(registrar.port)" }
              messages: { plugin: core, file: { path: "\(sandbox.path("messages.jsonl"))" } }
            routes:
              - { from: pager.messages, to: messages.write }
            """
        }
        try sandbox.writeRoutes(routes("alice"))
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox)
        await router.waitUntil("the first registration") { router.standardError.contains("registered sip:alice@example.test") }

        try sandbox.writeRoutes(routes("carol"))
        router.send(signal: SIGHUP)
        await router.waitUntil("the reload") { router.occurrences(of: "routes reloaded") == 1 }
        let requests = registrar.waitForRequests(3)
        #expect(requests.count == 3, "\(requests)")
        let unregister = requests.dropFirst().first ?? ""
        #expect(SIPScriptedPeer.header("From", in: unregister)?.contains("sip:alice@example.test") == true, "\(unregister)")
        #expect(SIPScriptedPeer.header("Expires", in: unregister) == "0", "\(unregister)")
        let register = requests.last ?? ""
        #expect(SIPScriptedPeer.header("From", in: register)?.contains("sip:carol@example.test") == true, "\(register)")
        #expect(SIPScriptedPeer.header("Contact", in: register)?.contains(":\(port)") == true, "\(register)")
        await router.waitUntil("the new registration") { router.standardError.contains("registered sip:carol@example.test") }
        #expect(router.logged("reconfigured [\"pager\"]"), "\(router.standardError)")
        #expect(router.occurrences(of: "listening on 127.0.0.1:\(port)") == 1, "\(router.standardError)")

        // A configuration the plugin's configuration type refuses (registering needs a
        // password): validation decodes it before the reload starts, so the reload is rejected
        // and the instance keeps its configuration.
        try sandbox.writeRoutes(routes("dave").replacingOccurrences(of: ", password: secret", with: ""))
        router.send(signal: SIGHUP)
        await router.waitUntil("the rejection") { router.occurrences(of: "reload rejected") == 1 }
        #expect(router.logged("register needs identity.password"), "\(router.standardError)")
        #expect(registrar.requests.count == 3, "no REGISTER for dave: \(registrar.requests)")
        #expect(router.stop() == 0)
    }

    // MARK: Push webhook

    private static func pushInstance(port: Int, token: String, maxConnections: Int = 256) -> String {
        """
          push: { plugin: push, listen: "127.0.0.1:\(port)", auth: { bearer_token: "\(token)" }, max_connections: \(maxConnections) }
        """
    }

    private static let toFile = "routes:\n  - { from: push.messages, to: out.write }"

    private static func outInstance(_ sandbox: Sandbox) -> String {
        "\n  out:  { plugin: core, file: { path: \"\(sandbox.path("out.jsonl"))\" } }"
    }

    private static func push(_ webhook: String, token: String) throws -> Int {
        try HTTPExchange.send(webhook + "/push", method: "POST", headers: ["Authorization": "Bearer \(token)"], body: #"{"topic": "news"}"#)
            .status
    }

    @Test func aChangedWebhookTokenIsAdoptedOnTheSamePortThroughPostReload() async throws {
        let sandbox = try Sandbox()
        let port = try Int(LoopbackPort.free())
        let (router, webhook, admin) = try await PushRouter.start(
            sandbox, instances: Self.pushInstance(port: port, token: "before") + Self.outInstance(sandbox), routes: Self.toFile)
        #expect(webhook == "http://127.0.0.1:\(port)")
        #expect(try Self.push(webhook, token: "before") == 200)

        try sandbox.writeRoutes(
            "instances:\n" + Self.pushInstance(port: port, token: "after") + Self.outInstance(sandbox) + "\n" + Self.toFile)
        // The admin port's guard applies: a page on another site cannot make the router reload.
        let crossSite = try HTTPExchange.send(admin + "/reload", method: "POST", headers: ["Origin": "http://evil.example"])
        #expect(crossSite.status == 403, "\(crossSite.body)")
        #expect(router.occurrences(of: "reloading routes") == 0)
        let answer = try HTTPExchange.send(admin + "/reload", method: "POST")
        #expect(answer.status == 200, "\(answer.body)")
        #expect(answer.json["outcome"] as? String == "applied", "\(answer.body)")
        let instances = answer.json["instances"] as? [String: [String]] ?? [:]
        #expect(instances["reconfigured"] == ["push"], "\(answer.body)")
        #expect(instances["kept"] == ["out"], "\(answer.body)")
        #expect(instances["started"] == [] && instances["stopped"] == [], "\(answer.body)")

        #expect(try Self.push(webhook, token: "after") == 200)
        #expect(try Self.push(webhook, token: "before") == 401)
        #expect(sandbox.lines(of: "out.jsonl").count == 2)
        #expect(router.occurrences(of: "webhook listening on") == 1, "\(router.standardError)")
        #expect(!router.standardError.contains("start failed"))
        #expect(router.stop() == 0)
    }

    /// The instance is replaced (its connection limit shapes the socket, so it cannot be
    /// adopted), and a new second instance finds its port held by another program: the reload
    /// rolls back, the old configuration serves again on its port, and `switchyard reload`
    /// says so and exits 1.
    @Test func aNewInstanceThatCannotStartRollsTheReloadBack() async throws {
        let sandbox = try Sandbox()
        let port = try Int(LoopbackPort.free())
        let foreign = try ForeignListener()
        let (router, webhook, admin) = try await PushRouter.start(
            sandbox, instances: Self.pushInstance(port: port, token: "before") + Self.outInstance(sandbox), routes: Self.toFile)
        #expect(try Self.push(webhook, token: "before") == 200)

        try sandbox.writeRoutes(
            "instances:\n" + Self.pushInstance(port: port, token: "after", maxConnections: 64) + Self.outInstance(sandbox)
                + "\n  second: { plugin: push, listen: \"127.0.0.1:\(foreign.port)\" }\n" + Self.toFile)
        let reload = try RouterProcess.runToExit(["reload", "--admin", admin], in: sandbox.root)
        #expect(reload.status == 1, "\(reload.output)\n\(reload.errors)")
        #expect(reload.output.hasPrefix("reload rolled back: instance 'second': start failed"), "\(reload.output)")
        #expect(reload.output.contains("instances stopped: push"), "\(reload.output)")
        #expect(router.logged("reload rolled back"), "\(router.standardError)")

        // The previous configuration runs again: the old token is accepted on the same port.
        #expect(try Self.push(webhook, token: "before") == 200)
        #expect(try Self.push(webhook, token: "after") == 401)
        #expect(try HTTPExchange.send(admin + "/readyz").status == 200)
        let instances = try HTTPExchange.send(admin + "/v1/instances").body
        #expect(!instances.contains("second"), "\(instances)")

        // The same reload through the admin API: 500 with the summary.
        let answer = try HTTPExchange.send(admin + "/reload", method: "POST")
        #expect(answer.status == 500, "\(answer.body)")
        #expect(answer.json["outcome"] as? String == "rolled_back", "\(answer.body)")
        #expect((answer.json["reason"] as? String)?.contains("Address already in use") == true, "\(answer.body)")
        #expect(try Self.push(webhook, token: "before") == 200)
        #expect(router.stop() == 0)
    }

    /// At-least-once envelopes waiting for a sink that is down survive a reload that retires
    /// their route, replaces the sink and then rolls back: once the sink is up, every accepted
    /// message is delivered.
    @Test func aRolledBackReloadLosesNoAtLeastOnceEnvelope() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("testkit")
        let down = sandbox.path("sink-down")
        #expect(FileManager.default.createFile(atPath: down, contents: nil))
        let foreign = try ForeignListener()
        func instances(sinkLogLevel: String?, second: Bool) -> String {
            """
              push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "${PUSH_BEARER}" } }
              sink: { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))", fail_while: "\(down)" }\(sinkLogLevel.map { ", log_level: \($0)" } ?? "") }
            """ + (second ? "\n  second: { plugin: push, listen: \"127.0.0.1:\(foreign.port)\" }" : "")
        }
        let routes = """
            routes:
              - { from: push.messages, to: sink.collect, delivery: at-least-once, retry: { attempts: 1000, backoff: 20ms, max_backoff: 100ms } }
            """
        let (router, webhook, admin) = try await PushRouter.start(
            sandbox, instances: instances(sinkLogLevel: nil, second: false), routes: routes)
        var accepted: Set<String> = []
        for index in 0..<20 {
            let answer = try HTTPExchange.send(
                webhook + "/push", method: "POST", headers: ["Authorization": "Bearer \(PushRouter.bearer)"],
                body: #"{"topic": "news", "data": {"n": "\#(index)"}}"#)
            #expect(answer.status == 200, "\(answer.body)")
            if let id = answer.json["id"] as? String { accepted.insert(id) }
        }
        #expect(accepted.count == 20)

        // A log level of its own replaces the sink (so the route is retired too); the second
        // instance cannot bind: rolled back.
        try sandbox.writeRoutes("instances:\n" + instances(sinkLogLevel: "debug", second: true) + "\n" + routes)
        let answer = try HTTPExchange.send(admin + "/reload", method: "POST")
        #expect(answer.json["outcome"] as? String == "rolled_back", "\(answer.body)")
        #expect((answer.json["routes"] as? [String: [String]])?["retired"]?.isEmpty == false, "\(answer.body)")
        #expect(sandbox.lines(of: "collected.txt").isEmpty, "the sink is still down")

        try FileManager.default.removeItem(atPath: down)
        await router.waitUntil("every accepted message delivered") {
            Set(sandbox.lines(of: "collected.txt").compactMap { $0.split(separator: " ").first.map(String.init) }).isSuperset(of: accepted)
        }
        #expect(router.stop() == 0)
    }

    @Test func switchyardReloadPrintsTheSummaryAndFailsOnARejectedFile() async throws {
        let sandbox = try Sandbox()
        let port = try Int(LoopbackPort.free())
        let (router, _, admin) = try await PushRouter.start(
            sandbox, instances: Self.pushInstance(port: port, token: "before") + Self.outInstance(sandbox), routes: Self.toFile)

        try sandbox.writeRoutes(
            "instances:\n" + Self.pushInstance(port: port, token: "before") + Self.outInstance(sandbox)
                + "\n  more: { plugin: core, file: { path: \"\(sandbox.path("more.jsonl"))\" } }\n" + Self.toFile
                + "\n  - { from: push.messages, to: more.write }")
        let applied = try RouterProcess.runToExit(["reload", "--admin", admin], in: sandbox.root)
        #expect(applied.status == 0, "\(applied.output)\n\(applied.errors)")
        #expect(applied.output.hasPrefix("reload applied\n"), "\(applied.output)")
        #expect(applied.output.contains("instances started: more"), "\(applied.output)")
        #expect(applied.output.contains("instances kept: push, out"), "\(applied.output)")

        try sandbox.writeRoutes("instances:\n  broken: { plugin: nope }\n")
        let rejected = try RouterProcess.runToExit(["reload", "--admin", admin, "--json"], in: sandbox.root)
        #expect(rejected.status == 1, "\(rejected.output)\n\(rejected.errors)")
        #expect(rejected.output.contains(#""outcome":"rejected""#), "\(rejected.output)")
        #expect(rejected.output.contains("nope"), "\(rejected.output)")

        let unreachable = try RouterProcess.runToExit(["reload", "--admin", "127.0.0.1:\(try Int(LoopbackPort.free()))"], in: sandbox.root)
        #expect(unreachable.status == 2, "\(unreachable.errors)")
        #expect(unreachable.errors.contains("cannot connect to the admin port"), "\(unreachable.errors)")
        #expect(router.stop() == 0)
    }
}

/// A TCP socket listening on a loopback port, as another program would hold it.
final class ForeignListener {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = LoopbackPort.loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && listen(descriptor, 4) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard descriptor >= 0, ready else {
            close(descriptor)
            throw SandboxError("cannot listen on a loopback port: errno \(errno)")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
