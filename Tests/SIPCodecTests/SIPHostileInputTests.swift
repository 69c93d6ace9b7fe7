import SIPCodec
import Testing

/// Integers at their limits and bytes that would split a header line: refused or clamped by the
/// codec, so nothing the agent computes from a parsed value can overflow or inject.
@Suite struct SIPHostileInputTests {
    static func message(cseq: String = "1 MESSAGE", extra: String = "") -> [UInt8] {
        Array(
            ("MESSAGE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKa\r\nFrom: <sip:a@b>;tag=1\r\n"
                + "To: <sip:bob@example.com>\r\nCall-ID: c\r\nCSeq: \(cseq)\r\n\(extra)Content-Length: 0\r\n\r\n").utf8)
    }

    @Test(arguments: ["2147483648 MESSAGE", "4294967295 MESSAGE"])
    func aCSeqNotBelow2To31IsMalformed(cseq: String) {
        #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: Self.message(cseq: cseq)) }
        do throws(SIPParseError) {
            _ = try SIPParser.parse(datagram: Self.message(cseq: cseq))
        } catch {
            #expect(error.reason.contains("is not below 2^31"), "\(error)")
        }
    }

    @Test func theLargestCSeqStillParses() throws {
        let message = try SIPParser.parse(datagram: Self.message(cseq: "2147483647 MESSAGE"))
        #expect(message.headers.cseq?.number == SIPHeaders.maximumCSeq)
    }

    @Test(arguments: ["X-Evil: a\rInjected: b\r\n", "X-Evil: a\u{0}b\r\n"])
    func aCROrNULInsideAFieldIsMalformed(field: String) {
        do throws(SIPParseError) {
            _ = try SIPParser.parse(datagram: Self.message(extra: field))
            Issue.record("accepted a header holding CR or NUL")
        } catch {
            #expect(error.reason.contains("holds a CR or NUL"), "\(error)")
        }
    }

    @Test func aNULInTheRequestURIIsMalformed() {
        var bytes = Self.message()
        bytes[12] = 0
        #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: bytes) }
    }

    @Test func deltaSecondsAreDigitsOnlyAndClamped() {
        #expect(SIPDeltaSeconds.parse("600") == 600)
        #expect(SIPDeltaSeconds.parse(" 0 ") == 0)
        #expect(SIPDeltaSeconds.parse("4294967295") == SIPDeltaSeconds.maximum)
        #expect(SIPDeltaSeconds.parse("9223372036854775807") == SIPDeltaSeconds.maximum)
        #expect(SIPDeltaSeconds.parse(String(repeating: "9", count: 10_000)) == SIPDeltaSeconds.maximum)
        #expect(SIPDeltaSeconds.parse("-9223372036854775808") == nil)
        #expect(SIPDeltaSeconds.parse("+5") == nil)
        #expect(SIPDeltaSeconds.parse("") == nil)
        #expect(SIPDeltaSeconds.parse("1e9") == nil)
        #expect(SIPDeltaSeconds.parseLeading("120 (in a meeting);duration=60") == 120)
        #expect(SIPDeltaSeconds.parseLeading("99999999999999999999;duration=1") == SIPDeltaSeconds.maximum)
    }
}
