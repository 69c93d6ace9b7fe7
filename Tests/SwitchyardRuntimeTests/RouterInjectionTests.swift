import SwitchyardCore
import Testing

@testable import SwitchyardRuntime

/// The admin API's inject: an envelope delivered straight to a sink port, checked like a
/// route's output, answered with the plugin's acknowledgement.
@Suite struct RouterInjectionTests {
    @Test func anInjectedEnvelopeIsAcknowledgedCheckedOrTimesOut() async throws {
        let acknowledging = FakeInstance.register("injectAcks")
        FakeInstance.register("injectSilent", autoAck: false)
        let yaml = """
            instances:
              injectAcks: { plugin: fake }
              injectSilent: { plugin: fake }
            routes:
              - { from: injectAcks.out, to: injectSilent.any }
            """
        let router = Router(plan: try plan(yaml), logger: quietLogger)
        try router.start()
        defer { router.shutdown(drainTimeout: .milliseconds(200)) }

        let ok = try await router.injector.inject(body: bodyA(x: 1), type: "t.A", instance: "injectAcks", port: "any", timeout: .seconds(5))
        #expect(ok == .ok)
        #expect(acknowledging.deliveries.map(\.envelope.type) == ["t.A"])
        #expect(acknowledging.deliveries.first?.envelope.source == "admin")

        let silent = try await router.injector.inject(
            body: bodyA(x: 2), type: "t.A", instance: "injectSilent", port: "any", timeout: .milliseconds(50))
        #expect(silent == .timedOut)

        await #expect(throws: SinkInjector.InjectionError.self) {
            try await router.injector.inject(body: bodyA(x: 3), type: "t.A", instance: "injectAcks", port: "out", timeout: .seconds(1))
        }
        await #expect(throws: SinkInjector.InjectionError.self) {
            try await router.injector.inject(body: bodyA(x: 3), type: "t.A", instance: "nobody", port: "any", timeout: .seconds(1))
        }
        // A body that does not fit its type's schema never reaches the plugin.
        await #expect(throws: SinkInjector.InjectionError.self) {
            try await router.injector.inject(
                body: Array(#"{"x": "one"}"#.utf8), type: "t.A", instance: "injectAcks", port: "any", timeout: .seconds(1))
        }
        #expect(acknowledging.deliveries.count == 1)
    }
}
