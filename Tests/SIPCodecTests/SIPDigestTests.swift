import SIPCodec
import Testing

/// Digest authentication against the RFCs' own examples (values checked with Python's hashlib).
@Suite struct SIPDigestTests {
    /// RFC 2617 §3.5 (MD5, qop=auth).
    @Test func md5WithQopMatchesRFC2617() throws {
        let challenge = try #require(
            SIPDigest.Challenge(
                header:
                    #"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#
            ))
        #expect(challenge.algorithm == .md5)
        #expect(challenge.qopAuth)
        let value = SIPDigest.authorization(
            challenge: challenge, username: "Mufasa", password: "Circle Of Life", method: "GET", uri: "/dir/index.html", cnonce: "0a4f113b",
            nc: 1)
        #expect(value.contains(#"response="6629fae49393a05397450978507c4ef1""#), "\(value)")
        #expect(value.contains("nc=00000001"))
        #expect(value.contains(#"opaque="5ccc069c403ebaf9f0171e9517f40e41""#))
    }

    /// RFC 7616 §3.9.1 (SHA-256, qop=auth).
    @Test func sha256MatchesRFC7616() throws {
        let challenge = try #require(
            SIPDigest.Challenge(
                header:
                    #"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#
            ))
        #expect(challenge.algorithm == .sha256)
        let value = SIPDigest.authorization(
            challenge: challenge, username: "Mufasa", password: "Circle of Life", method: "GET", uri: "/dir/index.html",
            cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", nc: 1)
        #expect(value.contains(#"response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1""#), "\(value)")
        #expect(value.contains("algorithm=SHA-256"))
    }

    @Test func theStrongestOfferedAlgorithmIsChosenAndOthersIgnored() {
        let headers = [
            #"Digest realm="x", nonce="a", algorithm=MD5, qop="auth""#,
            #"Digest realm="x", nonce="b", algorithm=SHA-256, qop="auth""#,
            #"Digest realm="x", nonce="c", algorithm=SHA-512-256"#,
            #"Basic realm="x""#,
        ]
        #expect(SIPDigest.Challenge.strongest(in: headers)?.nonce == "b")
        #expect(SIPDigest.Challenge(header: #"Digest realm="x", nonce="n", stale=TRUE"#)?.stale == true)
        #expect(SIPDigest.Challenge(header: #"Digest nonce="n""#) == nil, "a challenge without a realm is not usable")
    }
}
