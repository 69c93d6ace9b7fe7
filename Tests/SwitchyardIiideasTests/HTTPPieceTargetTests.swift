import Glibc
import SwitchyardRuntime
import Testing

@testable import SwitchyardIiideas

/// The `http` piece's checks before any request: schemes, and which resolved addresses are
/// public (every literal form of a loopback or private address, IPv4 inside IPv6 included).
struct HTTPPieceTargetTests {
    static func bytes(_ text: String) -> [UInt8] {
        if text.contains(":") {
            var address = in6_addr()
            #expect(inet_pton(AF_INET6, text, &address) == 1, "\(text)")
            return withUnsafeBytes(of: address) { Array($0) }
        }
        var address = in_addr()
        #expect(inet_pton(AF_INET, text, &address) == 1, "\(text)")
        return withUnsafeBytes(of: address) { Array($0) }
    }

    @Test(arguments: [
        "127.0.0.1", "127.255.0.9", "0.0.0.0", "0.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "169.254.169.254", "100.64.0.1", "100.127.255.255", "224.0.0.1", "255.255.255.255", "198.18.0.1",
        "::1", "::", "fe80::1", "febf::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.1.2.3",
        "::127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:c0a8:0101::1", "2001:db8::1",
    ])
    func nonPublicAddressesAreRefused(_ address: String) {
        #expect(!HTTPPiece.isPublic(Self.bytes(address)), "\(address)")
    }

    @Test(arguments: [
        "93.184.216.34", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.15.255.255", "172.32.0.1", "169.253.1.1",
        "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:0808:0808::1",
    ])
    func publicAddressesAreAllowed(_ address: String) {
        #expect(HTTPPiece.isPublic(Self.bytes(address)), "\(address)")
    }

    @Test func oddLengthsAreNotPublic() {
        #expect(!HTTPPiece.isPublic([]))
        #expect(!HTTPPiece.isPublic([1, 2, 3]))
    }

    @Test(arguments: [
        ("http://127.0.0.1:8080/x", "127.0.0.1, a loopback"), ("http://localhost/x", "a loopback"),
        ("http://[::1]/x", "is ::1, a loopback"), ("http://[::ffff:127.0.0.1]/x", "a loopback"),
        ("http://2130706433/x", "is 127.0.0.1, a loopback"), ("http://0x7f.1/x", "is 127.0.0.1, a loopback"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254"), ("file:///etc/passwd", "only http and https"),
        ("gopher://example.com/", "only http and https"), ("http:///x", "no host"), ("not a url", "not a URL"),
    ])
    func refusedTargetsSayWhy(_ url: String, _ reason: String) {
        let error = #expect(throws: ServiceError.self) { try HTTPPiece.Target(url, policy: HTTPPiecePolicy()) }
        #expect(error?.refused == true, "\(url)")
        #expect(error?.description.contains(reason) == true, "\(url): \(String(describing: error))")
    }

    @Test func allowPrivateLetsLoopbackThroughWithoutPinning() throws {
        let target = try HTTPPiece.Target("http://127.0.0.1:1/x", policy: HTTPPiecePolicy(allowPrivate: true))
        #expect(target.pinnedAddress == nil)
        #expect(target.host == "127.0.0.1")
    }

    @Test func userInfoIsNotShownInMessages() {
        let error = #expect(throws: ServiceError.self) {
            try HTTPPiece.Target("http://user:secret@127.0.0.1/x", policy: HTTPPiecePolicy())
        }
        #expect(error?.description.contains("secret") == false, "\(String(describing: error))")
    }
}
