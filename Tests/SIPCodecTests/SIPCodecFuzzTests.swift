import FuzzingSupport
import SIPCodec
import Testing

/// Random and mutated input from a fixed-seed generator: parsing must never crash, every error
/// must say what is wrong, and whatever is accepted must serialize to bytes that parse back to
/// the same message, byte for byte. `scripts/fuzz-sip-parser` runs the same checks under libFuzzer.
@Suite struct SIPCodecFuzzTests {
    static let seeds: [String] = [
        "MESSAGE sip:alice@example.test SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-1;rport\r\n"
            + "From: \"Bob\" <sip:bob@peer.test>;tag=1\r\nTo: <sip:alice@example.test>\r\nCall-ID: a@b\r\nCSeq: 1 MESSAGE\r\n"
            + "Max-Forwards: 70\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
        "SIP/2.0 401 Unauthorized\r\nv: SIP/2.0/TCP h;branch=z9hG4bK-2\r\nf: <sip:a@b>;tag=x\r\nt: <sip:a@b>\r\ni: c\r\n"
            + "CSeq: 2 REGISTER\r\nWWW-Authenticate: Digest realm=\"b\", nonce=\"n\", qop=\"auth\", algorithm=SHA-256\r\nl: 0\r\n\r\n",
        "REGISTER sip:b SIP/2.0\r\nVia: SIP/2.0/UDP h:1;branch=z9hG4bK-3,\r\n SIP/2.0/UDP g:2;branch=z9hG4bK-4\r\nFrom: <sip:a@b>;tag=y\r\n"
            + "To: <sip:a@b>\r\nCall-ID: d\r\nCSeq: 3 REGISTER\r\nContact: <sip:a@h:1;transport=tcp>;expires=60\r\nContent-Length: 0\r\n\r\n",
    ]

    private struct Outcome {
        var messages = 0
        var errors = 0
    }

    /// Parses `bytes` as a datagram and as a stream; checks the invariants.
    private func exercise(_ bytes: [UInt8], into outcome: inout Outcome) throws {
        do throws(SIPParseError) {
            let message = try SIPParser.parse(datagram: bytes)
            outcome.messages += 1
            // Serializing rewrites Content-Length (last, the body's size): from then on it is stable.
            let serialized = message.serialized()
            let again = try SIPParser.parse(datagram: serialized)
            #expect(again.serialized() == serialized, "\(String(decoding: bytes, as: UTF8.self))")
            #expect(again.startLine == message.startLine && again.body == message.body)
        } catch {
            outcome.errors += 1
            #expect(!error.reason.isEmpty)
            _ = SIPParser.salvageRequest(bytes)
        }
        var decoder = SIPStreamDecoder()
        decoder.append(bytes)
        do throws(SIPParseError) {
            while let message = try decoder.next() { _ = message.serialized() }
        } catch {
            #expect(!error.reason.isEmpty)
        }
    }

    @Test func randomBytes() throws {
        var generator = SeededGenerator(seed: 0x5EED_0101)
        var outcome = Outcome()
        let alphabet = Array("SIP/2.0 MESSAGE:;,<>\"=\r\n\t abc123Content-LengthVia".utf8)
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...80, using: &generator)
            let bytes = (0..<count).map { _ in
                Bool.random(using: &generator)
                    ? UInt8.random(in: 0...255, using: &generator) : alphabet.randomElement(using: &generator) ?? 0
            }
            try exercise(bytes, into: &outcome)
        }
        #expect(outcome.errors > 0)
    }

    @Test func mutatedValidMessages() throws {
        var generator = SeededGenerator(seed: 0x5EED_0102)
        var outcome = Outcome()
        for _ in 0..<20_000 {
            var bytes = Array(Self.seeds[Int.random(in: 0..<Self.seeds.count, using: &generator)].utf8)
            for _ in 0..<Int.random(in: 1...4, using: &generator) { Mutation.apply(to: &bytes, using: &generator) }
            try exercise(bytes, into: &outcome)
        }
        #expect(outcome.errors > 0)
        #expect(outcome.messages > 0)
    }
}
