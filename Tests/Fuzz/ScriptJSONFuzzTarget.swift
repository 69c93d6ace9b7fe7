// libFuzzer entry point for the JSON ↔ Lua value bridge of scripts (built by scripts/fuzz,
// with the C bridge instrumented and LeakSanitizer on). Input: JSON text, any bytes. Both
// directions: json.decode/json.encode in the sandbox, and the envelope body a script sees and
// sends back. Whatever the bytes (deep nesting, huge strings, invalid UTF-8, NaN spelt out), the
// bridge answers a value or a message, never traps, never leaks; what it encodes is JSON the
// router's own parser reads, and encoding that again gives the same text.
import SwitchyardCore
import SwitchyardScript

private let limits = ScriptLimits(
    memory: 8 * 1024 * 1024, instructions: 1_000_000, stringLength: 256 * 1024, patternSteps: 1_000_000, outputs: 4)
private let bridge = compiled("return nil")
private let echo = compiled("return { body = envelope.body }")

private func compiled(_ text: String) -> Script {
    do {
        return try Script(source: ScriptSource(text: text, file: "fuzz.lua"), limits: limits)
    } catch {
        fatalError("the fuzz target's own script does not compile: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScriptJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if case .success(let encoded) = bridge.jsonRoundTrip(bytes) {
        precondition((try? JSONValue(parsing: encoded)) != nil, "the bridge encoded text that is not JSON")
        guard case .success(let again) = bridge.jsonRoundTrip(encoded) else { preconditionFailure("its own JSON did not decode again") }
        // Invalid UTF-8 is replaced by U+FFFD when encoded, which can reorder object keys or
        // make two equal (a lossy input, ScriptLibraryTests.invalidUTF8InKeys): the text is
        // stable from there on, so only its second encoding must equal its first.
        if String(validating: bytes, as: UTF8.self) != nil {
            precondition(again == encoded, "encoding is not stable")
        } else if case .success(let third) = bridge.jsonRoundTrip(again) {
            precondition(third == again, "encoding is not stable once the invalid UTF-8 was replaced")
        }
    }
    let run = echo.run(Envelope(id: "fuzz", type: "json", body: bytes))
    if let output = run.outputs.first, run.failure == nil, output.contentType == "application/json" {
        precondition((try? JSONValue(parsing: output.body)) != nil, "a JSON body that is not JSON")
    }
    return 0
}
