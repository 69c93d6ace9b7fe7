// The libFuzzer entry point for the SIP parser: datagrams and stream framing (built by
// scripts/fuzz). The checks are those of SIPCodecFuzzTests; a failed one traps, which libFuzzer
// reports with the input.
@testable import SIPCodec

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSIPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do throws(SIPParseError) {
        let message = try SIPParser.parse(datagram: bytes)
        let serialized = message.serialized()
        let again = try SIPParser.parse(datagram: serialized)
        precondition(again.serialized() == serialized, "serialization is not stable")
        precondition(again.startLine == message.startLine && again.body == message.body, "round trip changed the message")
    } catch {
        precondition(!error.reason.isEmpty, "an error without a reason")
        _ = SIPParser.salvageRequest(bytes)
    }
    var decoder = SIPStreamDecoder()
    decoder.append(bytes)
    do throws(SIPParseError) {
        while let message = try decoder.next() { _ = message.serialized() }
    } catch {
        precondition(!error.reason.isEmpty, "an error without a reason")
    }
    return 0
}
