import SwitchyardCore
import SwitchyardPluginKit
import Testing

/// A delivery the router lends a sink reads as the envelope it was lent from.
struct BorrowedEnvelopeTests {
    static let headers = Headers([("mqtt.topic", "plant/line-4/temperature"), ("mqtt.qos", "1"), ("x-ünïcode", "välue")])
    static let body = Array(#"{"celsius": 21.5}"#.utf8)

    @Test func aLentEnvelopeReadsAsItsCopy() {
        let original = Envelope(
            type: "demo.Reading", subject: "plant/line-4", headers: Self.headers, contentType: "text/plain; charset=utf-8",
            body: Self.body, trace: ["a", "b"])
        original.lend { lent in
            #expect(lent.hasType("demo.Reading") && !lent.hasType("demo.Readings") && lent.hasType(anyOf: ["x", "demo.Reading"]))
            #expect(lent.subject == "plant/line-4" && lent.time == original.time)
            #expect(lent.header("mqtt.qos") == "1" && lent.header("x-ünïcode") == "välue" && lent.header("absent") == nil)
            #expect(lent.headerCount == 3)
            #expect(
                lent.headersAreAll(in: ["mqtt.topic", "mqtt.qos", "x-ünïcode"]) && !lent.headersAreAll(in: ["mqtt.topic", "mqtt.qos"]))
            #expect(lent.contentTypeHasPrefix("text/") && !lent.contentTypeHasPrefix("application/"))
            #expect(lent.hasContentType("text/plain; charset=utf-8") && !lent.hasContentType(""))
            #expect(lent.withBody { Array($0) } == Self.body && lent.bodyCount == Self.body.count)
            let copy = lent.copy()
            #expect(copy.id == original.id && copy.trace == original.trace && copy.body == original.body)
        }
    }
}
