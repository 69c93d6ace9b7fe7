// libFuzzer entry point for the spool's binary envelope codec and the JSON body parser (built
// by scripts/fuzz). Whatever decodes must encode and decode to the same envelope; a failed check
// traps, which libFuzzer reports with the input.
import SwitchyardCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let envelope = try? Envelope(serialized: bytes) {
        let again = try? Envelope(serialized: envelope.serializedBytes())
        precondition(again == envelope, "the binary round trip changed the envelope")
        _ = envelope.jsonObject().serializedBytes()
        _ = envelope.timeText
    }
    // The same bytes as a JSON body: what parses serializes to JSON that serializes the same
    // again (not equal values: 2.0 is written as 2 and read back as an integer).
    if let value = try? JSONValue(parsing: bytes) {
        let text = value.serializedBytes()
        let again = try? JSONValue(parsing: text)
        precondition(again?.serializedBytes() == text, "serialized JSON does not read back the same")
    }
    return 0
}
