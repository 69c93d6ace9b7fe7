// libFuzzer entry point for `when:` conditions and Mustache templates (built by scripts/fuzz).
// Input: one byte choosing condition, template or percent-encoded template, the expression up
// to the first NUL, then the envelope body. Parsing either succeeds or throws a diagnostic with
// a message; evaluating and rendering never trap, whatever the body holds.
import SwitchyardCore
import SwitchyardRouting

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRouting(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let rest = bytes.dropFirst()
    let end = rest.firstIndex(of: 0) ?? rest.endIndex
    let source = String(decoding: rest[..<end], as: UTF8.self)
    let body = Array(rest[end...].dropFirst())
    let envelope = Envelope(
        id: "01ARYZ6S410000000000000000", type: "json", source: "fuzz.out", subject: "sensors/kitchen", time: 1_700_000_000_000_000_000,
        headers: ["mqtt.qos": "1", "x.y": "z"], contentType: mode & 0x80 == 0 ? "application/json" : "text/plain", body: body,
        trace: ["fuzz"], session: Array("session".utf8))
    var scope = EnvelopeScope(envelope)
    let location = SourceLocation(file: "routes.yaml", line: 3, column: 11)
    do throws(Diagnostic) {
        switch mode % 3 {
        case 0:
            let condition = try Condition(parsing: source, at: location)
            _ = condition.evaluate(&scope)
        case 1:
            let template = try Template(parsing: source, at: location)
            _ = template.render(&scope)
            _ = template.renderText(&scope)
        default:
            let template = try Template(parsing: source, at: nil, escaping: .percentEncoded)
            _ = template.renderText(&scope)
        }
    } catch {
        precondition(!error.message.isEmpty, "a diagnostic without a message")
    }
    return 0
}
