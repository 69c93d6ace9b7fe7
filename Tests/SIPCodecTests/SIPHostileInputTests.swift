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

/// The stream decoder however a peer cuts its bytes: the same messages, in time linear in the bytes.
@Suite(.timeLimit(.minutes(2))) struct SIPStreamDecoderLimitsTests {
    static let stream = Array(
        ("\r\n\r\n" + String(decoding: SIPHostileInputTests.message(), as: UTF8.self)
            + "MESSAGE sip:b@c SIP/2.0\nVia: SIP/2.0/TCP h;branch=z9hG4bKb\nFrom: <sip:a@b>;tag=2\nTo: <sip:b@c>\nCall-ID: d\n"
            + "CSeq: 2 MESSAGE\nContent-Length: 4\n\nbody\r\n").utf8)

    @Test func oneByteAtATimeGivesTheSameMessages() throws {
        var whole = SIPStreamDecoder()
        whole.append(Self.stream)
        var expected: [SIPMessage] = []
        while let message = try whole.next() { expected.append(message) }
        #expect(expected.count == 2)
        #expect(expected.last?.body == Array("body".utf8))
        var trickled = SIPStreamDecoder()
        var received: [SIPMessage] = []
        for byte in Self.stream {
            trickled.append([byte])
            while let message = try trickled.next() { received.append(message) }
        }
        #expect(received == expected)
    }

    /// A slowloris: a 512 KiB head one byte at a time. Rescanning the buffer per byte would take
    /// some 10^11 steps; a linear decoder is done in well under the bound.
    @Test func aHeadTrickledOneByteAtATimeCostsLinearTime() throws {
        let limits = SIPLimits(headerBytes: 1 << 20, headerCount: 100_000, messageBytes: 2 << 20)
        var decoder = SIPStreamDecoder(limits: limits)
        let filler = String(repeating: "X-Filler: \(String(repeating: "y", count: 100))\r\n", count: 5000)
        let text = String(decoding: SIPHostileInputTests.message(extra: filler), as: UTF8.self)
        let bytes = Array(text.utf8)
        #expect(bytes.count > 500_000)
        // Byte by byte: a decoder that scanned from the start at each byte would take hours on
        // 500 KB; the suite's time limit is what it would trip (no speed is asserted).
        var messages = 0
        for byte in bytes {
            decoder.append(CollectionOfOne(byte))
            if try decoder.next() != nil { messages += 1 }
        }
        #expect(messages == 1)
    }

    @Test func aStreamMessageOverTheMessageLimitIsTooLarge() {
        var decoder = SIPStreamDecoder(limits: SIPLimits(messageBytes: 300))
        decoder.append(SIPHostileInputTests.message(extra: "X-Pad: " + String(repeating: "p", count: 300) + "\r\n"))
        do throws(SIPParseError) {
            _ = try decoder.next()
            Issue.record("accepted a message over the limit")
        } catch {
            #expect(error.kind == .tooLarge)
        }
    }
}
