import SwitchyardCore
import Testing

@testable import SwitchyardScript

/// Compiles `text` as an inline script written at line 10 of `r.yaml`.
private func script(_ text: String, limits: ScriptLimits = .standard) throws -> Script {
    try Script(source: ScriptSource(text: text, file: "r.yaml", firstLine: 10, column: 7), limits: limits)
}

private func reading(_ json: String, subject: String = "sensors/kitchen/temp", headers: Headers = ["mqtt.qos": "1"]) -> Envelope {
    Envelope(
        id: "in", type: "mqtt.Message", source: "broker.messages", subject: subject, time: 1_767_225_600_500_000_000, headers: headers,
        body: Array(json.utf8))
}

/// The one output of a run, or a failure naming what happened instead.
private func only(_ run: ScriptRun, _ comment: Comment? = nil) throws -> Envelope {
    #expect(run.failure == nil, "\(run.failure?.message ?? "")")
    try #require(run.outputs.count == 1, comment ?? "outputs: \(run.outputs.count)")
    return run.outputs[0]
}

@Suite struct ScriptContractTests {
    @Test func theEnvelopeIsSeenWithEveryField() throws {
        let probe = try script(
            """
            local e = envelope
            return { body = { body = e.body, subject = e.subject, qos = e.headers["mqtt.qos"], type = e.type, id = e.id,
                              time = e.time, source = e.source, session = e.session, ct = e.content_type } }
            """)
        var input = reading(#"{"celsius": 21.5, "tags": ["a"], "none": null}"#)
        input.session = Array(#"{"user": "u1"}"#.utf8)
        let output = try only(probe.run(input))
        #expect(
            output.decodedBody()
                == [
                    "body": ["celsius": 21.5, "tags": ["a"], "none": .null], "subject": "sensors/kitchen/temp", "qos": "1",
                    "type": "mqtt.Message", "id": "in", "time": 1_767_225_600.5, "source": "broker.messages", "session": ["user": "u1"],
                    "ct": "application/json",
                ])
    }

    @Test func aBodyThatIsNotJSONIsAString() throws {
        let echo = try script(#"return { body = type(envelope.body) .. ":" .. envelope.body }"#)
        var text = reading("not json {")
        let output = try only(echo.run(text))
        #expect(output.bodyText == "string:not json {")
        #expect(output.contentType == "text/plain; charset=utf-8")
        text.contentType = "text/plain"
        text.body = Array("42".utf8)
        #expect(try only(echo.run(text)).bodyText == "string:42", "a text/* body is never decoded")
    }

    @Test func fieldsLeftOutKeepTheInputsAndHeadersReplaceTheTable() throws {
        let retopic = try script(#"return { subject = "home/x", headers = { ["mqtt.topic"] = "home/x" } }"#)
        let output = try only(retopic.run(reading(#"{"v": 1}"#)))
        #expect(output.subject == "home/x")
        #expect(output.headers.dictionary == ["mqtt.topic": "home/x"])
        #expect(output.body == Array(#"{"v": 1}"#.utf8), "the body is kept byte for byte")
        #expect(output.type == "mqtt.Message")
        let addOne = try script(#"envelope.headers["x-room"] = "kitchen" return envelope"#)
        let added = try only(addOne.run(reading(#"{"v": 1}"#)))
        #expect(added.headers.dictionary == ["mqtt.qos": "1", "x-room": "kitchen"])
    }

    @Test func nilAndFalseDropTrueKeepsAndEmitSendsMany() throws {
        #expect(try script("return nil").run(reading("{}")).outputs.isEmpty)
        #expect(try script("return false").run(reading("{}")).outputs.isEmpty)
        let filter = try script("return envelope.body.v > 20")
        let kept = try only(filter.run(reading(#"{ "v" : 21 }"#)))
        #expect(kept.body == Array(#"{ "v" : 21 }"#.utf8), "true sends the envelope byte for byte")
        #expect(kept.type == "mqtt.Message" && kept.id == "in" && kept.headers.dictionary == ["mqtt.qos": "1"])
        #expect(filter.run(reading(#"{"v": 3}"#)).outputs.isEmpty)
        let split = try script("for i = 1, 3 do emit { body = { i = i } } end")
        let run = split.run(reading("{}"))
        #expect(run.outputs.map { $0.decodedBody() } == [["i": 1], ["i": 2], ["i": 3]])
        #expect(run.outputs.map(\.id) == ["in", "in.1", "in.2"])
    }

    @Test func malformedResultsAreErrorsThatSayWhat() throws {
        let cases: [(String, String)] = [
            ("return 42", "returned"),
            ("return { bdy = 1 }", "bdy"),
            ("return { subject = 5 }", "subject"),
            ("return { headers = { ['bad\\nname'] = 'x' } }", "header"),
            ("return { headers = { ok = 'line\\r\\nbreak' } }", "header"),
            ("emit { body = 1 } return { body = 2 }", "emit"),
        ]
        for (text, word) in cases {
            let run = try script(text).run(reading("{}"))
            let failure = try #require(run.failure, "\(text) must fail")
            #expect(failure.kind == .error)
            #expect(failure.message.contains(word), "\(text): \(failure.message)")
            #expect(run.outputs.isEmpty)
        }
    }

    @Test func runtimeErrorsNameTheRouteFilesLine() throws {
        let failing = try script("local a = 1\nlocal b = nil\nreturn { body = a + b }")
        let failure = try #require(failing.run(reading("{}")).failure)
        #expect(failure.message.hasPrefix("r.yaml:12:"), "\(failure.message)")
        #expect(failure.message.contains("arithmetic"))
    }

    @Test func aSyntaxErrorIsADiagnosticAtItsLine() {
        #expect {
            try script("local x = 1\nif x then\n  return envelope\n")
        } throws: { error in
            guard let diagnostic = error as? Diagnostic else { return false }
            return diagnostic.location == SourceLocation(file: "r.yaml", line: 12, column: 7)
                && diagnostic.message.contains("'end' expected")
        }
    }
}

@Suite struct ScriptLibraryTests {
    private func value(_ expression: String) throws -> JSONValue {
        try only(script("return { body = { v = \(expression) } }").run(reading("{}"))).decodedBody()["v"] ?? .null
    }

    @Test func json() throws {
        #expect(try value(#"json.encode({ b = 1, a = { true, json.null } })"#) == #"{"a":[true,null],"b":1}"#)
        #expect(try value(#"json.encode(json.array({}))"#) == "[]")
        #expect(try value(#"json.encode(json.decode('[]'))"#) == "[]")
        #expect(try value(#"select(2, json.decode('{'))"#).stringValue?.isEmpty == false, "invalid JSON: nil and a message")
        #expect(try value(#"json.decode('{"a": [1, 2.5, "\\u00e9"]}').a[3]"#) == "é")
        #expect(try value(#"pcall(json.encode, 0/0)"#) == false, "NaN is refused")
        #expect(try value(#"pcall(json.encode, { [true] = 1 })"#) == false)
        #expect(try value(#"json.encode("\xff")"#) == "\"\u{FFFD}\"", "invalid UTF-8 becomes U+FFFD")
    }

    /// From the script-json fuzz target: object keys with invalid UTF-8 are encoded with U+FFFD,
    /// so the text is lossy (keys may reorder or meet) but valid JSON, and stable from there on.
    @Test func invalidUTF8InKeysIsReplacedAndStableFromThereOn() throws {
        let bridge = try script("return nil")
        let lossy = Array(#"{"a":0,""#.utf8) + [0xBB] + Array(#"n":1,""#.utf8) + [0x88] + Array(#"f":2}"#.utf8)
        let once = try bridge.jsonRoundTrip(lossy).get()
        #expect(String(decoding: once, as: UTF8.self) == "{\"a\":0,\"\u{FFFD}f\":2,\"\u{FFFD}n\":1}")
        let twice = try bridge.jsonRoundTrip(once).get()
        #expect(twice == once)
    }

    @Test func base64HexAndPack() throws {
        #expect(try value(#"base64.encode("hello")"#) == "aGVsbG8=")
        #expect(try value(#"base64.decode("aGVsbG8=")"#) == "hello")
        #expect(try value(#"base64.decode("***") == nil"#) == true)
        #expect(try value(#"hex.encode("\1\255")"#) == "01ff")
        #expect(try value(#"select(1, string.unpack("<i2", hex.decode("0cfe")))"#) == -500)
        #expect(try value(#"hex.decode("abc") == nil"#) == true)
    }

    @Test func time() throws {
        #expect(try value(#"time.format(0)"#) == "1970-01-01T00:00:00Z")
        #expect(try value(#"time.format(1700000000.5, "+02:00")"#) == "2023-11-15T00:13:20.500+02:00")
        #expect(try value(#"time.parse("2023-11-15T00:13:20.500+02:00")"#) == 1_700_000_000.5)
        #expect(try value(#"time.parse("2024-02-29T00:00:00Z")"#) == 1_709_164_800)
        #expect(try value(#"time.parse("2023-02-29T00:00:00Z") == nil"#) == true, "not a leap year")
        let clocked = try script("return { body = { now = time.now(), os = os.time() } }")
        clocked.setClock(1_767_225_600)
        #expect(try only(clocked.run(reading("{}"))).decodedBody() == ["now": 1_767_225_600, "os": 1_767_225_600])
    }
}

@Suite(.timeLimit(.minutes(2))) struct ScriptSandboxTests {
    @Test func nothingOutsideTheSandboxIsReachable() throws {
        let probe = try script(
            """
            return { body = { io = type(io), execute = type(os.execute), getenv = type(os.getenv), require = type(require),
              package = type(package), debug = type(debug), dofile = type(dofile), loadfile = type(loadfile),
              dump = type(string.dump) } }
            """)
        let body = try only(probe.run(reading("{}"))).decodedBody()
        for key in ["io", "execute", "getenv", "require", "package", "debug", "dofile", "loadfile", "dump"] {
            #expect(body[key] == "nil", "\(key) is reachable")
        }
    }

    @Test func binaryChunksFinalizersAndGarbageControlAreRefused() throws {
        for text in [
            #"assert(load("\27Lua"))"#, #"setmetatable({}, { __gc = function() end })"#, #"collectgarbage("stop")"#,
        ] {
            #expect(try script(text).run(reading("{}")).failure != nil, "\(text) must fail")
        }
    }

    @Test func budgetsStopHostileScriptsAndTheStateStaysUsable() throws {
        let limits = ScriptLimits(
            memory: 4 * 1024 * 1024, instructions: 200_000, stringLength: 64 * 1024, patternSteps: 10_000_000, outputs: 10)
        let hostile = try script(
            """
            local kind = envelope.body.kind
            if kind == "loop" then while true do end end
            if kind == "pcall" then while true do pcall(function() while true do end end) end end
            if kind == "coroutine" then while true do coroutine.resume(coroutine.create(function() while true do end end)) end end
            if kind == "memory" then local t = {} while true do t[#t + 1] = {} end end
            if kind == "rep" then return { body = string.rep("x", 1e9) } end
            if kind == "pattern" then return { body = { found = string.find(string.rep("a", 5000), ".-.-.-.-.-b") } } end
            if kind == "recursion" then local function f() return f() + 1 end return { body = f() } end
            if kind == "emit" then for i = 1, 100 do emit { body = i } end return end
            return { body = { ok = true } }
            """, limits: limits)
        let expected: [(String, ScriptFailure.Kind?)] = [
            ("loop", .instructionBudget), ("pcall", .instructionBudget), ("coroutine", .instructionBudget), ("memory", nil),
            ("rep", .error), ("pattern", .error), ("recursion", .memoryBudget), ("emit", .error),
        ]
        for (kind, failureKind) in expected {
            // Stopped by a budget (counted instructions, bytes): what stops it is not the clock,
            // so no time is asserted; the suite's time limit is what a script left running trips.
            let run = hostile.run(reading(#"{"kind": "\#(kind)"}"#))
            let failure = try #require(run.failure, "\(kind) must be stopped")
            if let failureKind { #expect(failure.kind == failureKind, "\(kind): \(failure.kind) \(failure.message)") }
            #expect(try only(hostile.run(reading(#"{"kind": "fine"}"#))).decodedBody() == ["ok": true], "after \(kind)")
        }
        #expect(hostile.memory <= limits.memory)
    }
}

@Suite struct ScriptStateTests {
    @Test func stateRoundTripsThroughJSON() throws {
        let counter = try script("state.n = (state.n or 0) + 1 return { body = state.n }")
        _ = counter.run(reading("{}"))
        _ = counter.run(reading("{}"))
        let saved = try counter.stateJSON().get()
        #expect(String(decoding: saved, as: UTF8.self) == #"{"n":2}"#)
        let restarted = try script("state.n = (state.n or 0) + 1 return { body = state.n }")
        #expect(restarted.restoreState(saved))
        #expect(try only(restarted.run(reading("{}"))).decodedBody() == 3)
        #expect(!restarted.restoreState(Array("[1]".utf8)), "only an object is a state")
    }

    @Test func aStateHoldingAFunctionIsNotKeptAndSaysWhy() throws {
        let keeper = try script("state.f = print return nil")
        _ = keeper.run(reading("{}"))
        guard case .failure(let failure) = keeper.stateJSON() else {
            Issue.record("a function cannot be kept")
            return
        }
        #expect(failure.message.contains("function"))
    }
}
