// libFuzzer entry point for hostile scripts under the budgets (built by scripts/fuzz, with the C
// sandbox instrumented and LeakSanitizer on). Input: Lua source. Each input gets a fresh state
// with small budgets and runs twice on one envelope: it compiles or is a diagnostic; it runs, fails
// or is stopped by a budget — never traps, hangs (libFuzzer's timeout), grows past its memory
// limit or leaks when its state is closed.
import SwitchyardCore
import SwitchyardScript

private let limits = ScriptLimits(
    memory: 2 * 1024 * 1024, instructions: 200_000, stringLength: 64 * 1024, patternSteps: 2_000_000, outputs: 16)
private let input = Envelope(
    id: "fuzz", type: "mqtt.Message", source: "fuzz.messages", subject: "sensors/kitchen/temp", time: 1_767_225_600_000_000_000,
    headers: ["mqtt.qos": "1"], body: Array(#"{"celsius": 21.5, "readings": [1, 2, {"a": null}], "raw": "d2088813"}"#.utf8))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScriptSandbox(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let source = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let script: Script
    do {
        script = try Script(source: ScriptSource(text: source, file: "fuzz.lua"), limits: limits)
    } catch {
        precondition(!error.message.isEmpty, "a diagnostic without a message")
        return 0
    }
    script.setClock(1_767_225_600)
    for _ in 0..<2 {
        let run = script.run(input)
        if let failure = run.failure { precondition(!failure.message.isEmpty, "a failure without a message") }
        precondition(run.outputs.count <= limits.outputs, "more outputs than the budget")
        precondition(script.memory <= limits.memory, "the state grew past its memory limit")
    }
    _ = script.stateJSON()
    return 0
}
