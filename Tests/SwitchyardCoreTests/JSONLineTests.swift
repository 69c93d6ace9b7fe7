import SwitchyardCore
import Testing

@Suite("JSON line")
struct JSONLineTests {
    private func line(_ text: String) -> String? {
        JSONLine.compacted(Array(text.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func jsonIsCopiedWithoutTheWhiteSpaceBetweenTokens() {
        #expect(
            line(#" { "b" : [1, 2.5e3 ,-0, true,false , null],"a":{} , "c" : [ ] }"#)
                == #"{"b":[1,2.5e3,-0,true,false,null],"a":{},"c":[]}"#)
        #expect(
            line("{\n\t\"text\": \"line\\nbreak \\u00e9 \\ud83d\\ude00 \u{e9}\"\r\n}\n") == #"{"text":"line\nbreak \u00e9 \ud83d\ude00 é"}"#
        )
        #expect(line("42") == "42")
        #expect(line(#""just a string""#) == #""just a string""#)
    }

    @Test func whatTheParserRefusesIsRefused() {
        let refused = [
            "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "[1 2]", "01", "1.", "-", "1e", "+1", "tru", "nul", "[]]",
            "{} {}", "\"unterminated", "\"raw\u{01}control\"", "\"bad \\x escape\"", "\"\\u12\"", "\"\\ud83d alone\"", "\"\\ude00\"",
            "{\"a\":[}", "[{]}", "'single'",
        ]
        for text in refused {
            #expect(line(text) == nil, "\(text.debugDescription)")
            #expect((try? JSONValue(parsing: text)) == nil, "the parser takes \(text.debugDescription)")
        }
        #expect(JSONLine.compacted([0x22, 0xC3, 0x28, 0x22]) == nil)  // not UTF-8
        #expect(JSONLine.compacted([0x22, 0xFF, 0x22]) == nil)
    }

    @Test func nestingIsBoundedLikeTheParser() {
        let deepest = String(repeating: "[", count: JSONLine.maximumDepth) + String(repeating: "]", count: JSONLine.maximumDepth)
        #expect(line(deepest) == deepest)
        let tooDeep = "[" + deepest + "]"
        #expect(line(tooDeep) == nil)
        #expect((try? JSONValue(parsing: tooDeep)) == nil)
        // A hostile depth is refused without recursion.
        #expect(line(String(repeating: "[", count: 1_000_000)) == nil)
    }

    @Test func theCopyMeansWhatTheInputMeans() throws {
        let text = #"{"message": {"token": "t", "data": {"n": "1", "u": "\u00b0C"}}, "list": [1, -2.5, {"x": null}]}"#
        let copy = try #require(JSONLine.compacted(Array(text.utf8)))
        #expect(!copy.contains(0x0A) && !copy.contains(0x0D))
        #expect(try JSONValue(parsing: copy) == JSONValue(parsing: text))
    }
}
