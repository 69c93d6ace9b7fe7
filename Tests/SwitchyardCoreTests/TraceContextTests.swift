import SwitchyardCore
import Testing

/// The `traceparent`/`tracestate` checks the router applies before trusting a trace context.
@Suite struct TraceContextTests {
    @Test(arguments: [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
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
        // A later version (with or without more fields) is not one the tracer continues.
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\u{e9}",
    ])
    func malformedParentsAreNot(value: String) {
        #expect(!TraceContext.isValidParent(value))
    }

    @Test func aHugeParentIsRefusedWithoutBeingRead() {
        let huge = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" + String(repeating: "a", count: 1 << 20)
        #expect(!TraceContext.isValidParent(huge))
    }

    @Test(arguments: [
        "", "vendor=1", "vendor=1,other=abc", "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7", "tenant@system=value with spaces",
        "a*b/c_d-e=~!", String(repeating: "k", count: 256) + "=v",
    ])
    func wellFormedStatesArePassedOn(value: String) {
        #expect(TraceContext.isValidState(value))
    }

    @Test(arguments: [
        " vendor=1", "vendor", "vendor=", "Vendor=1", "1vendor=1", "vendor=a=b", "vendor=1,", "vendor=1,,other=2",
        "vendor=1\r\nInjected: yes", "vendor=caf\u{e9}", "t@System=1", "t@s1234567890abcd=1", "@s=1",
        String(repeating: "k", count: 257) + "=v", (1...33).map { "k\($0)=v" }.joined(separator: ","),
        String(repeating: "a", count: TraceContext.maximumStateLength + 1),
    ])
    func malformedStatesAreNot(value: String) {
        #expect(!TraceContext.isValidState(value))
    }

    @Test func onlyAWellFormedContextIsSentOn() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let both = TraceContext.outgoing(["traceparent": parent, "tracestate": "vendor=1"])
        #expect(both?.parent == parent && both?.state == "vendor=1")
        let withoutState = TraceContext.outgoing(["traceparent": parent, "tracestate": "bad state"])
        #expect(withoutState?.parent == parent && withoutState?.state == nil)
        #expect(TraceContext.outgoing(["traceparent": parent + "\r\nX: y", "tracestate": "vendor=1"]) == nil)
        #expect(TraceContext.outgoing(["tracestate": "vendor=1"]) == nil)
    }
}
