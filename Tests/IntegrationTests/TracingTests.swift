import Foundation
import Testing

@testable import IntegrationSupport

/// Tracing (issue 23) through the router binary: a W3C `traceparent` user property on an MQTT 5
/// publish reaches the FCM request of the push sender as its `traceparent` header, and the
/// router's spans, exported over OTLP/HTTP to `otlp_receiver.py` (which checks the protobuf
/// payloads with the OpenTelemetry schema), join that one trace. Also: the trace context through
/// MQTT out, the push webhook in and SIP in and out, and malformed contexts.
@Suite(.timeLimit(.minutes(3)))
struct TracingTests {
    static let clientID = "switchyard-trace"
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let publisherSpanID = "00f067aa0ba902b7"
    static var incoming: String { "00-\(traceID)-\(publisherSpanID)-01" }

    /// The OTLP/HTTP receiver, with the spans and refusals it reports.
    final class Receiver {
        private let server: PythonServer
        var baseURL: String { "http://127.0.0.1:\(server.port)" }

        init(in sandbox: Sandbox) throws {
            let script = BuildProducts.packageRoot.appendingPathComponent("Tests/IntegrationTests/Support/otlp_receiver.py").path
            let portFile = sandbox.path("otlp.port")
            server = try PythonServer(arguments: [script, portFile], portFile: portFile, what: "the OTLP receiver")
        }

        func stop() { server.stop() }

        /// The spans exported so far.
        func spans() throws -> [[String: Any]] {
            let answer = try HTTPExchange.send(baseURL + "/control/spans")
            return (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [[String: Any]] ?? []
        }

        /// Every export the receiver refused, and why.
        func errors() throws -> [String] {
            let answer = try HTTPExchange.send(baseURL + "/control/errors")
            return (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String] ?? []
        }
    }

    /// `00-TRACE-PARENT-FLAGS` split into its four fields, or nil.
    static func fields(_ traceparent: String?) -> [String]? {
        guard let parts = traceparent?.split(separator: "-").map(String.init), parts.count == 4 else { return nil }
        guard parts[1].count == 32, parts[2].count == 16 else { return nil }
        return parts
    }

    @Test func aTraceparentOnAnMQTTPublishReachesThePushRequestThroughTheRoutersSpans() async throws {
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        let endpoint = try FCMEndpoint(in: sandbox)
        defer { endpoint.stop() }
        let receiver = try Receiver(in: sandbox)
        defer { receiver.stop() }
        for plugin in ["core", "mqtt", "push"] { try sandbox.installPlugin(plugin) }
        try sandbox.writeRoutes(
            """
            tracing: { otlp_endpoint: "\(receiver.baseURL)", service_name: switchyard-trace-test }
            instances:
              broker: { plugin: mqtt, url: "\(broker.url)", client_id: \(Self.clientID), subscriptions: [ { topic: "alerts/#", qos: 1 } ] }
              push:
                plugin: push
                listen: "127.0.0.1:0"
                auth: { bearer_token: "app-token" }
                registry: "\(sandbox.path("tokens.db"))"
                fcm: { service_account: "\(endpoint.serviceAccountFile)", base_url: "\(endpoint.baseURL)" }
            routes:
              - { name: alerts, from: broker.messages, to: push.send }
            """)
        // A short batch delay: the spans are also flushed at shutdown, which the test relies on.
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, environment: ["OTEL_BSP_SCHEDULE_DELAY": "100"])
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        try broker.publish(
            topic: "alerts/door", message: #"{"token": "abc", "data": {"door": "open"}}"#, qos: 1, version: "mqttv5",
            arguments: ["-D", "publish", "user-property", "traceparent", Self.incoming])
        await router.waitUntil("the push request") { (try? endpoint.sends().count) == 1 }
        // Hostile input: malformed trace contexts start new traces and are logged once.
        for (index, malformed) in ["00-not-hex-01", "00-\(Self.traceID)-0000000000000000-01"].enumerated() {
            try broker.publish(
                topic: "alerts/window", message: #"{"token": "t\#(index)", "data": {"window": "open"}}"#, qos: 1, version: "mqttv5",
                arguments: ["-D", "publish", "user-property", "traceparent", malformed])
        }
        // A good traceparent with a malformed tracestate: the trace goes on, the state is dropped.
        let otherTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        try broker.publish(
            topic: "alerts/gate", message: #"{"token": "gate", "data": {"gate": "open"}}"#, qos: 1, version: "mqttv5",
            arguments: [
                "-D", "publish", "user-property", "traceparent", otherTrace, "-D", "publish", "user-property", "tracestate", "Not A State",
            ])
        await router.waitUntil("four push requests") { (try? endpoint.sends().count) == 4 }
        let allSends = try endpoint.sends()
        let gate = try #require(allSends.first { $0.message?["token"] as? String == "gate" })
        #expect(Self.fields(gate.traceparent)?[1] == "0af7651916cd43dd8448eb211c80319c", "\(gate.traceparent ?? "none")")
        let sends = allSends.filter { $0.message?["token"] as? String != "gate" }
        #expect(allSends.map(\.verdict) == ["ok", "ok", "ok", "ok"])
        let first = try #require(sends.first { $0.message?["token"] as? String == "abc" })
        let sent = try #require(Self.fields(first.traceparent), "traceparent of the push request: \(first.traceparent ?? "none")")
        #expect(sent[0] == "00" && sent[1] == Self.traceID && sent[3] == "01", "\(sent)")
        #expect(sent[2] != Self.publisherSpanID, "the router's delivery span is the request's parent")
        for other in sends where other.message?["token"] as? String != "abc" {
            let fields = try #require(Self.fields(other.traceparent), "\(other.traceparent ?? "none")")
            #expect(fields[1] != Self.traceID && fields[1] != String(repeating: "0", count: 32), "a new trace: \(fields)")
        }
        #expect(router.occurrences(of: "malformed traceparent ignored") == 1, "\(router.standardError)")
        #expect(try MetricsExposition.sample("switchyard_trace_contexts_malformed_total", admin: admin) == 3)
        // Nothing malformed reached swift-otel's own parser (which would log each one).
        #expect(router.occurrences(of: "Failed to extract") == 0, "\(router.standardError)")
        // Every delivery span ended with the sender's acknowledgement: none is left open.
        await router.waitUntil("no open delivery span") {
            (try? MetricsExposition.sample("switchyard_trace_deliveries_open", admin: admin)) == 0
        }
        // Graceful shutdown drains the router, then flushes its spans.
        #expect(router.stop() == 0, "\(router.standardError)")
        let refused = try receiver.errors()
        #expect(refused.isEmpty, "\(refused)")
        let spans = try receiver.spans().filter { $0["trace_id"] as? String == Self.traceID }
        let names = spans.compactMap { $0["name"] as? String }.sorted()
        #expect(names == ["deliver push.send", "receive broker.messages", "route alerts"], "\(spans)")
        #expect(spans.allSatisfy { $0["service"] as? String == "switchyard-trace-test" }, "\(spans)")
        let receive = try #require(spans.first { $0["name"] as? String == "receive broker.messages" })
        let route = try #require(spans.first { $0["name"] as? String == "route alerts" })
        let deliver = try #require(spans.first { $0["name"] as? String == "deliver push.send" })
        #expect(receive["parent_span_id"] as? String == Self.publisherSpanID)
        #expect(receive["kind"] as? String == "SPAN_KIND_CONSUMER")
        #expect(route["parent_span_id"] as? String == receive["span_id"] as? String)
        #expect(deliver["parent_span_id"] as? String == route["span_id"] as? String)
        #expect(deliver["kind"] as? String == "SPAN_KIND_PRODUCER")
        #expect(deliver["span_id"] as? String == sent[2], "the push request's parent is the delivery span")
        #expect(deliver["status"] as? String != "STATUS_CODE_ERROR", "\(deliver)")
        #expect((deliver["attributes"] as? [String: Any])?["switchyard.route"] as? String == "alerts")
        // The malformed contexts' envelopes were traced too, each as a trace of its own.
        let others = Set(try receiver.spans().compactMap { $0["trace_id"] as? String }).subtracting([
            Self.traceID, "0af7651916cd43dd8448eb211c80319c",
        ])
        #expect(others.count == 2, "\(others)")
    }

    @Test func withoutTracingTheTraceparentPassesThroughUnchanged() async throws {
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        for plugin in ["core", "mqtt"] { try sandbox.installPlugin(plugin) }
        try sandbox.writeRoutes(
            """
            instances:
              broker: { plugin: mqtt, url: "\(broker.url)", client_id: \(Self.clientID), subscriptions: [ { topic: "in/#", qos: 1 } ] }
            routes:
              - name: relay
                from: broker.messages
                map: { topic: "out/relayed", payload: "{{body}}", qos: 1 }
                type: mqtt.Publish
                to: broker.publish
                loop: allow
            """)
        let subscriber = try MosquittoSubscriber(broker, topic: "out/#", qos: 1, version: "mqttv5", format: "%P|%p")
        defer { subscriber.stop() }
        let router = try RouterProcess(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        broker.waitForLog("Sending SUBACK to \(Self.clientID)")
        try broker.publish(
            topic: "in/a", message: "hello", qos: 1, version: "mqttv5",
            arguments: [
                "-D", "publish", "user-property", "traceparent", Self.incoming, "-D", "publish", "user-property", "tracestate", "vendor=1",
                "-D", "publish", "user-property", "room", "kitchen",
            ])
        let lines = subscriber.waitForLines(1)
        // Other user properties keep their order; the trace context follows them, once each.
        #expect(lines == ["room:kitchen traceparent:\(Self.incoming) tracestate:vendor=1|hello"], "\(router.standardError)")
        // Tracing is set up at start: a reload that adds it says so and changes nothing.
        try sandbox.writeRoutes("tracing: {}\n", name: "tracing.yaml")
        router.send(signal: SIGHUP)
        await router.waitUntil("the reload's warning") { router.standardError.contains("the tracing settings changed") }
        #expect(router.stop() == 0, "\(router.standardError)")
    }

    @Test func thePushWebhookCarriesTheRequestsTraceContextIntoTheEnvelope() async throws {
        let sandbox = try Sandbox()
        let (router, webhook, _) = try await PushRouter.startWebhookToFile(sandbox)
        let body = #"{"topic": "news", "data": {"k": "v"}}"#
        var headers = PushRouter.signed(body)
        headers["traceparent"] = Self.incoming
        headers["tracestate"] = "vendor=1"
        let answer = try HTTPExchange.send(webhook + "/push", method: "POST", headers: headers, body: body)
        #expect(answer.status == 200, "\(answer.body)")
        // A value longer than any trace context is not taken.
        let long = #"{"topic": "news", "data": {"k": "long"}}"#
        var longHeaders = PushRouter.signed(long)
        longHeaders["traceparent"] = String(repeating: "a", count: 600)
        #expect(try HTTPExchange.send(webhook + "/push", method: "POST", headers: longHeaders, body: long).status == 200)
        let envelopes = try sandbox.jsonLines(of: "out.jsonl")
        #expect(envelopes.count == 2)
        let traced = envelopes.first?["headers"] as? [String: String]
        #expect(traced?["traceparent"] == Self.incoming && traced?["tracestate"] == "vendor=1", "\(traced ?? [:])")
        #expect((envelopes.last?["headers"] as? [String: String])?["traceparent"] == nil)
        #expect(router.stop() == 0)
    }

    @Test func sipMessagesCarryTheTraceContextInAndOut() async throws {
        let uas = try SIPp(scenario: SIPp.uasScenario())
        let sandbox = try Sandbox()
        let receiver = try Receiver(in: sandbox)
        defer { receiver.stop() }
        try sandbox.writeRoutes("tracing: { otlp_endpoint: \"\(receiver.baseURL)\" }\n", name: "tracing.yaml")
        let (router, _, port) = try await SIPEndpointRouter.start(sandbox, sendTo: "sip:bob@127.0.0.1:\(uas.port)")
        // In: a MESSAGE with a traceparent field; the file sink gets the router's delivery span as parent.
        let body = "traced"
        let text =
            "MESSAGE sip:alice@127.0.0.1:\(port) SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bK-traced\r\n"
            + "From: <sip:bob@peer.test>;tag=t1\r\nTo: <sip:alice@example.test>\r\nCall-ID: traced-1\r\nCSeq: 1 MESSAGE\r\n"
            + "Max-Forwards: 70\r\ntraceparent: \(Self.incoming)\r\nContent-Type: text/plain\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let answer = try UDPExchange.send(Array(text.utf8), to: port)
        #expect(answer.hasPrefix("SIP/2.0 200 OK\r\n"), "\(answer)")
        let headers = try #require(try sandbox.jsonLines(of: "messages.jsonl").first?["headers"] as? [String: String])
        let inbound = try #require(Self.fields(headers["traceparent"]), "\(headers)")
        #expect(inbound[1] == Self.traceID && inbound[2] != Self.publisherSpanID, "\(inbound)")
        #expect(headers["sip.header.traceparent"] == nil)
        // Out: a console line starts a trace; the MESSAGE sent carries it as a header field.
        router.send("hello\n")
        #expect(uas.waitForExit() == 0, "\(uas.diagnostics)\n\(router.standardError)")
        // SIPp's log: one header field per line, ended by CR LF (one Character in Swift).
        let fields = uas.messages.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        let sent = fields.first { $0.hasPrefix("traceparent: ") }.map { String($0.dropFirst("traceparent: ".count)) }
        let outbound = try #require(Self.fields(sent), "\(uas.messages)")
        #expect(outbound[1] != Self.traceID, "\(outbound)")
        #expect(router.stop() == 0)
    }
}
