import SwitchyardCore
import Testing

/// The bearer-token check the admin port and the push webhook share.
@Suite struct BearerTokenTests {
    @Test func bearerTokensCompareWhole() {
        #expect(BearerToken.matches(header: "Bearer abc", expected: "abc"))
        #expect(!BearerToken.matches(header: "Bearer abcd", expected: "abc"))
        #expect(!BearerToken.matches(header: "Bearer ab", expected: "abc"))
        #expect(!BearerToken.matches(header: "bearer abc", expected: "abc"))
        #expect(!BearerToken.matches(header: nil, expected: "abc"))
    }
}
