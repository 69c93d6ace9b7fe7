import SwitchyardCore
import Testing

/// The `traceparent`/`tracestate` checks the router applies before trusting a trace context.
@Suite struct TraceContextTests {
    @Test(arguments: [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
        // A later version may add fields after a dash.
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
    ])
    func wellFormedParentsAreTrusted(value: String) {
        #expect(TraceContext.isValidParent(value))
    }

    @Test(arguments: [
        "",
        "00-not-hex-01",
        // Upper case, the wrong lengths, all-zero ids, version ff, trailing data on version 00.
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\u{e9}",
    ])
    func malformedParentsAreNot(value: String) {
        #expect(!TraceContext.isValidParent(value))
    }

    @Test func aHugeParentIsRefusedWithoutBeingRead() {
        let huge = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + String(repeating: "a", count: 1 << 20)
        #expect(!TraceContext.isValidParent(huge))
    }

    @Test func traceStateIsBoundedAndPrintable() {
        #expect(TraceContext.isValidState("vendor=1,other=abc"))
        #expect(!TraceContext.isValidState(String(repeating: "a", count: TraceContext.maximumStateLength + 1)))
        #expect(!TraceContext.isValidState("vendor=1\r\nInjected: yes"))
    }
}
