import SwitchyardCore
import Testing

/// The error parsing `text` throws, or `nil` when it parses.
private func parseError(_ text: String) -> JSONParseError? {
    do throws(JSONParseError) {
        _ = try JSONValue(parsing: text)
        return nil
    } catch {
        return error
    }
}

private func parseError(bytes: [UInt8]) -> JSONParseError? {
    do throws(JSONParseError) {
        _ = try JSONValue(parsing: bytes)
        return nil
    } catch {
        return error
    }
}

@Suite struct JSONParsingTests {
    @Test(arguments: [
        ("null", JSONValue.null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("0", .int(0)),
        ("-0", .int(0)),
        ("42", .int(42)),
        ("-17", .int(-17)),
        ("1.5", .double(1.5)),
        ("-0.25", .double(-0.25)),
        ("1e3", .double(1000)),
        ("2E-2", .double(0.02)),
        ("\"text\"", .string("text")),
        ("[]", .array([])),
        ("{}", .object([:])),
        (" \t\r\n [ 1 , \"a\" ] \n", .array([.int(1), .string("a")])),
    ])
    func parsesScalarsAndContainers(text: String, expected: JSONValue) throws {
        #expect(try JSONValue(parsing: text) == expected)
    }

    @Test func integerTooLargeForIntBecomesDouble() throws {
        let value = try JSONValue(parsing: "12345678901234567890")
        #expect(value == .double(1.2345678901234567e19))
    }

    @Test func parsesNestedDocument() throws {
        let value = try JSONValue(parsing: #"{"a": [1, {"b": null}], "c": {"d": "e"}, "f": 2.5}"#)
        #expect(value == ["a": [1, ["b": nil]], "c": ["d": "e"], "f": 2.5])
        #expect(value["c"]?["d"]?.stringValue == "e")
        #expect(value.value(at: ["a", "1", "b"]) == .null)
        #expect(value.value(at: ["a", "2"]) == nil)
        #expect(value.value(at: ["f", "x"]) == nil)
    }

    @Test func parsesFromBytes() throws {
        let bytes: [UInt8] = Array(#"{"k":[true]}"#.utf8)
        #expect(try JSONValue(parsing: bytes) == ["k": [true]])
        #expect(try JSONValue(parsing: bytes[...]) == ["k": [true]])
    }

    @Test func decodesSimpleEscapes() throws {
        let value = try JSONValue(parsing: #""q\" b\\ s\/ \b\f\n\r\t end""#)
        #expect(value == .string("q\" b\\ s/ \u{08}\u{0C}\n\r\t end"))
    }

    @Test func decodesUnicodeEscapes() throws {
        #expect(try JSONValue(parsing: #""\u00e9\u0041""#) == .string("éA"))
        #expect(try JSONValue(parsing: #""\u20AC""#) == .string("€"))
        #expect(try JSONValue(parsing: #""x\u0000y""#) == .string("x\u{0}y"))
    }

    @Test func decodesSurrogatePairs() throws {
        #expect(try JSONValue(parsing: #""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONValue(parsing: #""a\uD834\uDD1Eb""#) == .string("a𝄞b"))
    }

    @Test(arguments: [#""\ud83d""#, #""\ud83dx""#, #""\ude00""#, #""\ud83d\u0041""#])
    func refusesBrokenSurrogates(text: String) {
        #expect(parseError(text) != nil)
    }

    @Test func keepsRawUTF8() throws {
        #expect(try JSONValue(parsing: "\"grüße 😀\"") == .string("grüße 😀"))
    }

    @Test func refusesInvalidUTF8InString() {
        let error = parseError(bytes: [0x22, 0x61, 0xFF, 0x22])
        #expect(error?.reason.contains("UTF-8") == true)
        #expect(error?.offset == 1)
    }

    @Test func errorCarriesByteOffset() throws {
        let error = try #require(parseError(#"{"a":}"#))
        #expect(error.offset == 5)
        #expect(error.description.hasPrefix("invalid JSON at byte 5:"))
    }

    @Test(arguments: [
        ("", 0),
        ("[1,]", 3),
        ("[1 2]", 3),
        (#"{"a" 1}"#, 5),
        (#"{a:1}"#, 1),
        ("tru", 0),
        ("nul", 0),
        ("[1", 2),
        (#""abc"#, 4),
        ("-", 1),
        ("1.", 2),
        ("1e", 2),
        ("@", 0),
        (#""\u12G4""#, 5),
        ("\"a\u{01}\"", 2),
    ])
    func reportsOffsetOfProblem(text: String, offset: Int) {
        let error = parseError(text)
        #expect(error?.offset == offset, "\(text)")
    }

    @Test func refusesUnknownEscape() throws {
        let error = try #require(parseError(#""ab\x""#))
        #expect(error.reason.contains("escape"))
        #expect((3...5).contains(error.offset))
    }

    @Test(arguments: ["01", "-01", "00", "007"])
    func refusesLeadingZero(text: String) throws {
        let error = try #require(parseError(text))
        #expect(error.reason.contains("leading zero"))
        #expect(error.offset == (text.hasPrefix("-") ? 2 : 1))
    }

    @Test func refusesTrailingData() throws {
        let error = try #require(parseError("1 2"))
        #expect(error.offset == 2)
        #expect(error.reason.contains("after the value"))
        #expect(parseError("{} x")?.offset == 3)
        #expect(parseError("[]]")?.offset == 2)
        #expect(parseError("true false") != nil)
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        let text = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        let error = try #require(parseError(text))
        #expect(error.reason.contains("nesting"))
        let objects = String(repeating: #"{"a":"#, count: 300) + "1" + String(repeating: "}", count: 300)
        #expect(parseError(objects)?.reason.contains("nesting") == true)
    }

    @Test func moderateNestingParses() throws {
        let text = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        var value = try JSONValue(parsing: text)
        var depth = 0
        while case .array(let elements) = value, let first = elements.first {
            value = first
            depth += 1
        }
        #expect(depth == 99)
    }
}

@Suite struct JSONSerializationTests {
    @Test func writesCompactWithSortedKeys() {
        let value: JSONValue = ["b": 1, "a": [true, nil, "x"], "c": ["z": 1, "y": 2]]
        #expect(value.serialized() == #"{"a":[true,null,"x"],"b":1,"c":{"y":2,"z":1}}"#)
        #expect(value.serializedBytes() == Array(value.serialized().utf8))
        #expect(value.description == value.serialized())
    }

    @Test func escapesStrings() {
        let value = JSONValue.string("q\"b\\n\nr\rt\tc\u{01}\u{1F}é/")
        #expect(value.serialized() == #""q\"b\\n\nr\rt\tc\u0001\u001fé/""#)
    }

    @Test(arguments: [
        (JSONValue.double(2.0), "2"),
        (.double(-3.0), "-3"),
        (.double(1.5), "1.5"),
        (.double(.nan), "null"),
        (.double(.infinity), "null"),
        (.int(-7), "-7"),
    ])
    func writesNumbers(value: JSONValue, text: String) {
        #expect(value.serialized() == text)
    }

    @Test(arguments: [
        #"{"a":[1,2.5,"x",null,true,false],"b":{"c":{}},"d":[]}"#,
        #"["\u0001","\"","\\","😀"]"#,
        #"{"":"","k":-12}"#,
    ])
    func roundTripsText(text: String) throws {
        let value = try JSONValue(parsing: text)
        #expect(value.serialized() == text)
        #expect(try JSONValue(parsing: value.serialized()) == value)
    }

    @Test func roundTripsValues() throws {
        let values: [JSONValue] = [
            ["name": "tab\there", "nested": [["deep": [1, 2, 3]]], "n": -0.125, "big": 1e300],
            .string("line\nbreak \u{7F} \u{2028} \"quoted\""),
            .array([.null, .bool(false), .int(Int.max), .int(Int.min)]),
        ]
        for value in values {
            #expect(try JSONValue(parsing: value.serializedBytes()) == value)
        }
    }

    @Test func accessors() {
        let value: JSONValue = ["s": "x", "i": 3, "d": 2.0, "f": 2.5, "b": true, "o": ["k": 1], "a": [1]]
        #expect(value["s"]?.stringValue == "x")
        #expect(value["i"]?.intValue == 3)
        #expect(value["d"]?.intValue == 2)
        #expect(value["f"]?.intValue == nil)
        #expect(value["f"]?.doubleValue == 2.5)
        #expect(value["b"]?.boolValue == true)
        #expect(value["o"]?.objectValue == ["k": 1])
        #expect(value["a"]?.arrayValue == [1])
        #expect(value["missing"] == nil)
        #expect(JSONValue.int(1)["x"] == nil)
        #expect(value["i"]?.typeName == "integer")
        #expect(value["f"]?.typeName == "number")
        #expect(JSONValue.null.text == "")
        #expect(JSONValue.string("a").text == "a")
        #expect(JSONValue.int(5).text == "5")
        #expect(value["o"]?.text == #"{"k":1}"#)
    }
}
