import Foundation
import SIPCodec
import Testing

/// The SIP codec on hand-written messages in the spirit of RFC 4475's torture tests, on stream
/// framing, and on mutated input (which must fail with an error, never crash).
@Suite struct SIPParserTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.replacingOccurrences(of: "\n", with: "\r\n").utf8) }

    static let message = bytes(
        """
        MESSAGE sip:bob@example.com SIP/2.0
        Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK776asdhds;rport
        Max-Forwards: 70
        To: "Bob" <sip:bob@example.com>
        From: Alice <sip:alice@example.com>;tag=49583
        Call-ID: asd88asd77a@192.0.2.1
        CSeq: 1 MESSAGE
        Content-Type: text/plain
        Content-Length: 5

        Hello
        """)

    @Test func aPagerMessageParses() throws {
        let message = try SIPParser.parse(datagram: Self.message)
        #expect(message.startLine == .request(method: "MESSAGE", uri: "sip:bob@example.com"))
        #expect(message.headers["via"] == "SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK776asdhds;rport")
        #expect(message.headers["Content-Type"] == "text/plain")
        #expect(message.headers.cseq?.number == 1)
        #expect(message.method == "MESSAGE")
        #expect(message.body == Array("Hello".utf8))
    }

    @Test func compactFormsFoldingAndOddWhitespaceAreAccepted() throws {
        let text = Self.bytes(
            """
            MESSAGE sip:bob@example.com SIP/2.0
            v:  SIP/2.0/TCP 192.0.2.1;branch=z9hG4bKa
            v : SIP/2.0/UDP 192.0.2.2;branch=z9hG4bKb,
             SIP/2.0/UDP 192.0.2.3;branch=z9hG4bKc
            t: <sip:bob@example.com>
            f: "Alice, \\"the\\" first" <sip:alice@example.com>;tag=1
            i: abc
            CSeq:   7   MESSAGE
            Subject: one,
            \ttwo
            c: text/plain
            l: 2

            Hi
            """)
        let message = try SIPParser.parse(datagram: text)
        #expect(
            message.headers.values("Via") == [
                "SIP/2.0/TCP 192.0.2.1;branch=z9hG4bKa", "SIP/2.0/UDP 192.0.2.2;branch=z9hG4bKb", "SIP/2.0/UDP 192.0.2.3;branch=z9hG4bKc",
            ])
        // A comma inside quotes does not split; From has one value.
        #expect(message.headers.values("From") == [#""Alice, \"the\" first" <sip:alice@example.com>;tag=1"#])
        #expect(message.headers["Subject"] == "one, two")
        #expect(message.headers["Call-ID"] == "abc")
        #expect(message.headers.cseq?.number == 7)
        #expect(message.body == Array("Hi".utf8))
    }

    @Test func authorizationHeadersAreNotSplitAtTheirCommas() throws {
        var text = String(decoding: Self.message, as: UTF8.self)
        text = text.replacingOccurrences(
            of: "Max-Forwards: 70",
            with: #"Max-Forwards: 70"# + "\r\n" + #"Authorization: Digest username="alice", realm="example.com", nonce="x,y", qop=auth"#)
        let message = try SIPParser.parse(datagram: Array(text.utf8))
        #expect(message.headers.values("Authorization").count == 1)
    }

    /// A header name the SIP plugin takes from an envelope is checked with `isToken`, the
    /// parser's own rule, so what it sends always parses (a Unicode letter is not a token
    /// character: found by the sip-agent fuzz target).
    @Test func tokensAreASCIIOnly() throws {
        #expect(SIPParser.isToken("X-Note"))
        #expect(SIPParser.isToken("x.y!%*_+`'~1"))
        #expect(!SIPParser.isToken(""))
        #expect(!SIPParser.isToken("X\u{4E7}ote"))
        #expect(!SIPParser.isToken("Caf\u{E9}"))
        #expect(!SIPParser.isToken("X Note"))
        var text = String(decoding: Self.message, as: UTF8.self)
        text = text.replacingOccurrences(of: "Max-Forwards: 70", with: "Max-Forwards: 70\r\nX\u{4E7}ote: a b")
        #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: Array(text.utf8)) }
    }

    @Test func responsesParseAndRoundTrip() throws {
        let response = SIPMessage(
            startLine: .response(status: 401, reason: "Unauthorized"),
            headers: [
                "Via": "SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKx", "From": "<sip:a@x>;tag=1", "To": "<sip:a@x>;tag=2", "Call-ID": "c1",
                "CSeq": "2 REGISTER", "WWW-Authenticate": #"Digest realm="x", nonce="n", qop="auth", algorithm=SHA-256"#,
            ])
        let parsed = try SIPParser.parse(datagram: response.serialized())
        #expect(parsed.status == 401)
        #expect(parsed.method == "REGISTER")
        #expect(parsed.headers["www-authenticate"] == #"Digest realm="x", nonce="n", qop="auth", algorithm=SHA-256"#)
        #expect(parsed.headers["Content-Length"] == "0")
        var withoutLength = parsed.headers
        withoutLength.remove("Content-Length")
        #expect(withoutLength == response.headers)
    }

    @Test(arguments: [
        ("MESSAGE sip:b@x SIP/3.0", "version 'SIP/3.0' is not SIP/2.0"),
        ("MESSAGE  SIP/2.0", "Request-URI '' is not a URI"),
        ("SIP/2.0 9999 Huge", "status code '9999' is not 100-699"),
        ("M@SSAGE sip:b@x SIP/2.0", "method 'M@SSAGE' is not a token"),
        ("HELLO", "start line 'HELLO' has not three parts"),
    ])
    func badStartLinesAreRefusedWithTheLine(startLine: String, reason: String) throws {
        let text = Self.bytes(
            startLine + "\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\nFrom: <sip:a@x>\nTo: <sip:b@x>\nCall-ID: 1\nCSeq: 1 MESSAGE\n\n")
        let error = #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: text) }
        #expect(error?.kind == .malformed)
        #expect(error?.reason == reason)
        #expect(error?.line == 1)
    }

    @Test func missingHeadersAndInconsistentCSeqAreRefused() throws {
        let noCallID = Self.bytes(
            "MESSAGE sip:b@x SIP/2.0\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\nFrom: <sip:a@x>\nTo: <sip:b@x>\nCSeq: 1 MESSAGE\n\n")
        #expect(throws: SIPParseError(.malformed, "missing Call-ID header")) { try SIPParser.parse(datagram: noCallID) }
        let wrongMethod = Self.bytes(
            "MESSAGE sip:b@x SIP/2.0\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\nFrom: <sip:a@x>\nTo: <sip:b@x>\nCall-ID: 1\nCSeq: 1 INVITE\n\n")
        #expect(throws: SIPParseError(.malformed, "CSeq method INVITE differs from the request method MESSAGE")) {
            try SIPParser.parse(datagram: wrongMethod)
        }
        let badHeader = Self.bytes("MESSAGE sip:b@x SIP/2.0\nVia SIP/2.0/UDP h\n\n")
        let error = #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: badHeader) }
        #expect(error?.line == 2)
    }

    @Test func contentLengthMustFitTheDatagramAndTheLimits() throws {
        let text = String(decoding: Self.message, as: UTF8.self)
        let tooLong = Array(text.replacingOccurrences(of: "Content-Length: 5", with: "Content-Length: 50").utf8)
        #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: tooLong) }
        let shorter = Array(text.replacingOccurrences(of: "Content-Length: 5", with: "Content-Length: 2").utf8)
        #expect(try SIPParser.parse(datagram: shorter).body == Array("He".utf8), "bytes beyond Content-Length are ignored")
        let error = #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: Self.message, limits: SIPLimits(bodyBytes: 4)) }
        #expect(error?.kind == .tooLarge)
        let big = Array(repeating: UInt8(ascii: "a"), count: 20000)
        #expect((#expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: big) })?.kind == .tooLarge)
    }

    @Test func aStreamIsFramedByContentLengthAcrossReads() throws {
        var decoder = SIPStreamDecoder()
        let two = [UInt8]("\r\n\r\n".utf8) + Self.message + Self.message
        // Byte by byte: nothing until a message is complete, then exactly that message.
        var messages: [SIPMessage] = []
        for byte in two {
            decoder.append([byte])
            while let message = try decoder.next() { messages.append(message) }
        }
        #expect(messages.count == 2)
        #expect(messages.allSatisfy { $0.body == Array("Hello".utf8) })
        var noLength = SIPStreamDecoder()
        noLength.append(
            Array(String(decoding: Self.message, as: UTF8.self).replacingOccurrences(of: "Content-Length: 5\r\n", with: "").utf8))
        #expect(throws: SIPParseError(.malformed, "no Content-Length on a stream transport")) { try noLength.next() }
    }

    /// Mutated messages: random byte changes, truncations and insertions, thousands of them,
    /// from a fixed seed. Each either parses or throws a SIPParseError; none crashes.
    @Test func mutatedInputFailsCleanly() {
        var generator = SplitMix64(seed: 0x5_1A9)
        var parsed = 0
        var refused = 0
        for _ in 0..<20000 {
            var bytes = Self.message
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                switch Int.random(in: 0..<4, using: &generator) {
                case 0 where !bytes.isEmpty:
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                case 1 where !bytes.isEmpty: bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator))
                case 2: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: Int.random(in: 0...bytes.count, using: &generator))
                default:
                    bytes.insert(
                        contentsOf: Array(":\r\n ,\"<".utf8).shuffled(using: &generator),
                        at: Int.random(in: 0...bytes.count, using: &generator))
                }
            }
            do {
                _ = try SIPParser.parse(datagram: bytes)
                parsed += 1
            } catch {
                refused += 1
            }
            var stream = SIPStreamDecoder()
            stream.append(bytes)
            _ = try? stream.next()
        }
        #expect(parsed + refused == 20000)
        #expect(refused > 1000, "mutations are mostly caught")
    }
}

/// A small seeded generator, so the mutation test is the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
