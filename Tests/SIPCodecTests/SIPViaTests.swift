import SIPCodec
import Testing

@Suite struct SIPViaTests {
    @Test func viaPartsAndParameters() throws {
        let via = try #require(SIPVia("SIP/2.0/udp 192.0.2.1:5062;branch=z9hG4bK776;rport;received=198.51.100.7"))
        #expect(via.transport == "UDP")
        #expect(via.host == "192.0.2.1")
        #expect(via.port == 5062)
        #expect(via.branch == "z9hG4bK776")
        #expect(via.parameters["rport"] == "")
        #expect(via.parameters["received"] == "198.51.100.7")
        #expect(via.parameters["maddr"] == nil)
    }

    @Test func ipv6AndNoPortAndRportFilledIn() throws {
        var via = try #require(SIPVia("SIP/2.0/TLS [2001:db8::1];branch=z9hG4bKx;rport"))
        #expect(via.host == "[2001:db8::1]")
        #expect(via.port == nil)
        via.parameters.set("rport", "40000")
        via.parameters.set("received", "2001:db8::9")
        #expect(via.text == "SIP/2.0/TLS [2001:db8::1];branch=z9hG4bKx;rport=40000;received=2001:db8::9")
    }

    @Test(arguments: ["SIP/2.0 host", "SIP/3.0/UDP host", "SIP/2.0/UDP host:port", "SIP/2.0/UDP ", "garbage"])
    func malformedViasAreRefused(text: String) {
        #expect(SIPVia(text) == nil)
    }
}
