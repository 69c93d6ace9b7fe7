import SIPCodec
import Testing

@Suite struct SIPAddressTests {
    @Test func nameAddrWithQuotedDisplayNameAndTag() throws {
        let address = try #require(SIPAddress(#""Alice \"A\" <x>" <sip:alice@example.com;transport=tcp>;tag=88sja8x"#))
        #expect(address.displayName == #"Alice "A" <x>"#)
        #expect(address.uri == "sip:alice@example.com;transport=tcp")
        #expect(address.tag == "88sja8x")
    }

    @Test func bareAddrSpecParametersBelongToTheHeader() throws {
        let address = try #require(SIPAddress("sip:bob@example.com;tag=1928301774"))
        #expect(address.uri == "sip:bob@example.com")
        #expect(address.tag == "1928301774")
        #expect(address.displayName == nil)
    }

    @Test func contactWithExpiresRoundTrips() throws {
        var address = try #require(SIPAddress("Bob <sip:bob@192.0.2.4:5070>;expires=3600"))
        #expect(address.displayName == "Bob")
        #expect(address.parameters["expires"] == "3600")
        address.parameters.set("expires", "0")
        #expect(address.text == #""Bob" <sip:bob@192.0.2.4:5070>;expires=0"#)
        #expect(SIPAddress(address.text) == address)
    }

    @Test(arguments: ["<sip:unterminated", "no uri here", "<not a uri>"])
    func malformedAddressesAreRefused(text: String) {
        #expect(SIPAddress(text) == nil)
    }
}
