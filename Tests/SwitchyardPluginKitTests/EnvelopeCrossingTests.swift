import PluginTestSupport
import SwitchyardCore
import SwitchyardPluginKit
import Testing

/// What crosses the ABI without an ``Envelope`` on the plugin's side — an emit of fields, a
/// lent delivery — is what the same envelope would have carried.
struct EnvelopeCrossingTests {
    static let headers = Headers([("mqtt.topic", "plant/line-4/temperature"), ("mqtt.qos", "1"), ("x-ünïcode", "välue")])
    static let body = Array(#"{"celsius": 21.5}"#.utf8)

    @Test func anEmitOfFieldsCarriesWhatTheEnvelopeWould() {
        let host = RecordingHost()
        let result = host.context.emit(
            type: "demo.Reading", subject: "plant/line-4", headers: Self.headers, contentType: "application/json", body: Self.body,
            on: "readings", settleToken: 7)
        #expect(result == .ok)
        let emitted = host.emitted(on: "readings")
        #expect(emitted.count == 1)
        let envelope = emitted[0].envelope
        #expect(envelope.type == "demo.Reading")
        #expect(envelope.subject == "plant/line-4")
        #expect(envelope.headers.fields.map(\.name) == Self.headers.fields.map(\.name))
        #expect(envelope.headers.fields.map(\.value) == Self.headers.fields.map(\.value))
        #expect(envelope.contentType == "application/json")
        #expect(envelope.body == Self.body)
        #expect(emitted[0].settleToken == 7)
        // The router's to fill: the id, the time, the source and the trace.
        #expect(envelope.id.isEmpty && envelope.time == 0 && envelope.source.isEmpty && envelope.trace.isEmpty)
    }

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
