import SwitchyardCore
import Testing

private func envelope(contentType: String, body: String) -> Envelope {
    Envelope(type: "t.Test", contentType: contentType, body: Array(body.utf8))
}

@Suite struct EnvelopeTests {
    @Test func emptyBodyDecodesToNull() {
        #expect(Envelope(type: "t", contentType: "application/json").decodedBody() == .null)
        #expect(Envelope(type: "t", contentType: "text/plain").decodedBody() == .null)
    }

    @Test(arguments: [
        ("application/json", #"{"a":1}"#, JSONValue.object(["a": 1])),
        ("application/json", "[1,2]", .array([1, 2])),
        ("application/json", "not json {", .string("not json {")),
        ("application/json", "42", .int(42)),
        ("text/plain", "42", .string("42")),
        ("text/plain", #"{"a":1}"#, .string(#"{"a":1}"#)),
        ("text/csv", "a,b", .string("a,b")),
        ("application/octet-stream", "true", .bool(true)),
        ("application/octet-stream", "hello", .string("hello")),
        ("application/vnd.custom+json", #"{"x":"y"}"#, .object(["x": "y"])),
    ])
    func decodedBodyFollowsContentType(contentType: String, body: String, expected: JSONValue) {
        #expect(envelope(contentType: contentType, body: body).decodedBody() == expected)
    }

    @Test func bodyTextIsLossyForInvalidUTF8() {
        let value = Envelope(type: "t", contentType: "application/octet-stream", body: [0x61, 0xFF, 0x62])
        #expect(value.bodyText == "a\u{FFFD}b")
        #expect(value.decodedBody() == .string("a\u{FFFD}b"))
    }

    @Test func defaultsFreshIdAndTime() {
        let before = Clock.nowUnixNanos()
        let first = Envelope(type: "t")
        let second = Envelope(type: "t")
        let after = Clock.nowUnixNanos()
        #expect(first.id.count == 26)
        #expect(first.id != second.id)
        #expect(first.time >= before && first.time <= after)
        #expect(first.contentType == "application/json")
        #expect(first.trace.isEmpty && first.body.isEmpty && first.session.isEmpty)
    }

    @Test(arguments: [("timer.tick", "timer"), ("solo", "solo"), ("", ""), ("a.b.c", "a")])
    func sourceInstance(source: String, instance: String) {
        #expect(Envelope(type: "t", source: source).sourceInstance == instance[...])
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (1_700_000_000_123_456_789, "2023-11-14T22:13:20.123Z"),
        (951_782_400_999_000_000, "2000-02-29T00:00:00.999Z"),
    ])
    func timeText(nanos: Int64, text: String) {
        #expect(Envelope(type: "t", time: nanos).timeText == text)
        #expect(Clock.rfc3339(unixNanos: nanos) == text)
    }

    @Test func jsonObjectEmbedsJSONBody() throws {
        let value = Envelope(
            id: "01ARYZ6S410000000000000000",
            type: "t.Reading",
            source: "sensor.out",
            subject: "room/1",
            time: 1_700_000_000_123_000_000,
            headers: ["mqtt.qos": "1", "x": "first"],
            contentType: "application/json",
            body: Array(#"{"temp":21.5}"#.utf8),
            trace: ["sensor", "relay"],
            session: Array(#"{"user":"u1"}"#.utf8)
        )
        let object = value.jsonObject()
        #expect(object["id"] == "01ARYZ6S410000000000000000")
        #expect(object["type"] == "t.Reading")
        #expect(object["source"] == "sensor.out")
        #expect(object["subject"] == "room/1")
        #expect(object["time"] == "2023-11-14T22:13:20.123Z")
        #expect(object["contentType"] == "application/json")
        #expect(object["headers"] == ["mqtt.qos": "1", "x": "first"])
        #expect(object["body"] == ["temp": 21.5])
        #expect(object["trace"] == ["sensor", "relay"])
        #expect(object["session"] == ["user": "u1"])
    }

    @Test func jsonObjectKeepsTextBodyAsStringAndOmitsEmptySession() {
        let object = envelope(contentType: "text/plain", body: "[1, 2]").jsonObject()
        #expect(object["body"] == .string("[1, 2]"))
        #expect(object["session"] == nil)
        #expect(object["trace"] == .array([]))
        #expect(object["headers"] == .object([:]))
    }

    @Test func jsonObjectHeadersUseLastOfRepeatedNames() {
        var headers = Headers()
        headers.append(name: "h", value: "1")
        headers.append(name: "h", value: "2")
        let object = Envelope(type: "t", headers: headers).jsonObject()
        #expect(object["headers"] == ["h": "2"])
    }
}

@Suite struct HeadersTests {
    @Test func keepsOrderAndRepeats() {
        var headers: Headers = ["a": "1", "b": "2"]
        headers.append(name: "a", value: "3")
        #expect(headers.count == 3)
        #expect(headers.map(\.name) == ["a", "b", "a"])
        #expect(headers.map(\.value) == ["1", "2", "3"])
        #expect(headers["a"] == "1")
        #expect(headers.dictionary == ["a": "3", "b": "2"])
    }

    @Test func namesAreCaseSensitive() {
        let headers: Headers = ["Content-Type": "x"]
        #expect(headers["content-type"] == nil)
        #expect(headers["Content-Type"] == "x")
    }

    @Test func settingReplacesEveryValueOfTheName() {
        var headers = Headers([(name: "a", value: "1"), (name: "b", value: "2"), (name: "a", value: "3")])
        headers["a"] = "new"
        #expect(headers.count == 2)
        #expect(headers.fields.map(\.name) == ["b", "a"])
        #expect(headers["a"] == "new")
        headers["b"] = nil
        #expect(headers.count == 1)
        #expect(headers["b"] == nil)
        headers["missing"] = nil
        #expect(headers.count == 1)
    }

    @Test func equalityIsOrderSensitive() {
        let first: Headers = ["a": "1", "b": "2"]
        let same: Headers = ["a": "1", "b": "2"]
        let swapped: Headers = ["b": "2", "a": "1"]
        let different: Headers = ["a": "1", "b": "3"]
        #expect(first == same)
        #expect(first != swapped)
        #expect(first != different)
        #expect(Headers() == Headers([]))
    }
}

@Suite("Envelope binary form")
struct EnvelopeBinaryTests {
    @Test("every field survives a round trip")
    func roundTrip() throws {
        let envelope = Envelope(
            id: "01J0ID", type: "mqtt.Message", source: "broker.in", subject: "a/b", time: -5,
            headers: Headers([(name: "k", value: "v"), (name: "k", value: "w"), (name: "ü", value: "")]), contentType: "text/plain",
            body: Array(repeating: 0xff, count: 300), trace: ["broker", "relay"], session: Array("{\"x\":1}".utf8))
        #expect(try Envelope(serialized: envelope.serializedBytes()) == envelope)
        let empty = Envelope(id: "", type: "t", time: 0, contentType: "")
        #expect(try Envelope(serialized: empty.serializedBytes()) == empty)
    }

    @Test("truncated, extended, mis-versioned and overlong input is refused, never trapped on")
    func malformed() {
        let bytes = Envelope(id: "x", type: "t", subject: "s", body: [1, 2, 3], trace: ["a"]).serializedBytes()
        for cut in 0..<bytes.count {
            #expect(throws: EnvelopeDecodingError.self) { try Envelope(serialized: Array(bytes.prefix(cut))) }
        }
        #expect(throws: EnvelopeDecodingError.self) { try Envelope(serialized: bytes + [0]) }
        #expect(throws: EnvelopeDecodingError.self) { try Envelope(serialized: [9] + bytes.dropFirst()) }
        #expect(throws: EnvelopeDecodingError.self) {
            try Envelope(serialized: [1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var mutated = bytes
            mutated[Int.random(in: 1..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            _ = try? Envelope(serialized: mutated)
        }
    }
}
