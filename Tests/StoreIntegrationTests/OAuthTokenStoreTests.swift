import Foundation
import SwitchyardStore
import Testing

@testable import IntegrationSupport

/// The two engines of OAuth connections' sealed tokens, held to one contract.
@Suite(.timeLimit(.minutes(2)))
struct OAuthTokenStoreTests {
    @Test(arguments: StoreEngine.allCases)
    func tokensAreKeptReplacedOnlyWhileUnchangedAndRemoved(engine: StoreEngine) throws {
        let (spool, postgres, cleanup) = try engine.open()
        defer { cleanup() }
        let store: any OAuthTokenStore = postgres ?? spool.store
        #expect(try store.oauthTokens(of: "example") == nil)
        try store.setOAuthTokens(of: "example", sealed: [1, 2, 3])
        try store.setOAuthTokens(of: "other", sealed: [9])
        #expect(try store.oauthTokens(of: "example") == [1, 2, 3])
        // A refresh replaces only what it started from.
        #expect(try store.replaceOAuthTokens(of: "example", expected: [1, 2, 3], with: [4, 5]))
        #expect(try !store.replaceOAuthTokens(of: "example", expected: [1, 2, 3], with: [6]), "changed since")
        #expect(try store.oauthTokens(of: "example") == [4, 5])
        #expect(try !store.replaceOAuthTokens(of: "example", expected: [9], with: nil))
        #expect(try store.replaceOAuthTokens(of: "example", expected: [4, 5], with: nil))
        #expect(try store.oauthTokens(of: "example") == nil)
        #expect(try !store.replaceOAuthTokens(of: "example", expected: [4, 5], with: [7]), "nothing to replace")
        try store.removeOAuthTokens(of: "other")
        #expect(try store.oauthTokens(of: "other") == nil)
    }
}
