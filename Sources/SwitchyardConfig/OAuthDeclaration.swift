public import SwitchyardCore

/// An OAuth 2.0 connection of the route files (`oauth: NAME: {…}`): the provider's endpoints
/// and the client registered with it. iiidea pieces name it (`auth: { oauth: NAME }`); a
/// person connects it once through the admin API (authorization code with PKCE).
public struct OAuthDeclaration: Sendable, Equatable {
    /// The connection's name.
    public var name: String
    /// The provider's authorization endpoint (RFC 6749 §3.1).
    public var authorizeURL: String
    /// The provider's token endpoint (RFC 6749 §3.2).
    public var tokenURL: String
    /// The client id.
    public var clientID: String
    /// The client secret; nil for a public client (PKCE alone).
    public var clientSecret: String?
    /// The scopes asked for.
    public var scopes: [String]
    /// Where the provider sends the browser back; nil: the admin port's `/v1/oauth/callback`.
    public var redirectURL: String?
    /// How long before the access token expires it is refreshed.
    public var refreshBefore: UInt64
    /// Where it was declared.
    public var location: SourceLocation

    /// Creates a declaration.
    public init(
        name: String, authorizeURL: String, tokenURL: String, clientID: String, clientSecret: String?, scopes: [String],
        redirectURL: String?, refreshBefore: UInt64, location: SourceLocation
    ) {
        self.name = name
        self.authorizeURL = authorizeURL
        self.tokenURL = tokenURL
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.scopes = scopes
        self.redirectURL = redirectURL
        self.refreshBefore = refreshBefore
        self.location = location
    }
}

extension OAuthDeclaration {
    /// `oauth:`: a mapping of connection names to `{authorize_url, token_url, client_id,
    /// client_secret, scopes, redirect_url, refresh_before}`. The secret must come from the
    /// environment (`"${VAR}"`): a route file is not a place for it.
    static func merge(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let connections = node.members else {
            diagnostics.append(
                Diagnostic("'oauth' must map connection names to { authorize_url, token_url, client_id, … }", at: node.location))
            return
        }
        for (name, nameLocation, settings) in connections {
            guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }), !name.isEmpty else {
                diagnostics.append(Diagnostic("oauth connection name '\(name)' may hold only letters, digits, _ and -", at: nameLocation))
                continue
            }
            guard !config.oauth.contains(where: { $0.name == name }) else {
                diagnostics.append(Diagnostic("oauth connection '\(name)' is declared twice", at: nameLocation))
                continue
            }
            guard let members = settings.members else {
                diagnostics.append(Diagnostic("oauth.\(name) must be a mapping", at: settings.location))
                continue
            }
            var text: [String: String] = [:]
            var scopes: [String] = []
            var refreshBefore: UInt64 = 60_000_000_000
            var failed = false
            for (key, keyLocation, value) in members {
                switch key {
                case "authorize_url", "token_url", "redirect_url", "client_id", "client_secret":
                    guard let string = value.scalarText, !string.isEmpty, value.members == nil, value.elements == nil else {
                        if !value.hasUnsetVariable {
                            diagnostics.append(Diagnostic("oauth.\(name).\(key) must be a string", at: value.location))
                        }
                        failed = true
                        continue
                    }
                    if key.hasSuffix("_url") {
                        let lowered = string.lowercased()
                        guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"), !string.contains(where: \.isWhitespace) else {
                            diagnostics.append(Diagnostic("oauth.\(name).\(key) must be an http or https URL", at: value.location))
                            failed = true
                            continue
                        }
                    }
                    if key == "client_secret", !value.isSecret {
                        diagnostics.append(
                            Diagnostic(
                                "oauth.\(name).client_secret must come from the environment, such as \"${\(name.uppercased())_CLIENT_SECRET}\"",
                                at: value.location))
                        failed = true
                        continue
                    }
                    text[key] = string
                case "scopes":
                    let names = value.elements?.compactMap(\.scalarText)
                    guard let names, names.count == value.elements?.count, names.allSatisfy({ !$0.contains(" ") && !$0.isEmpty }) else {
                        diagnostics.append(Diagnostic("oauth.\(name).scopes must be a list of scope names", at: value.location))
                        failed = true
                        continue
                    }
                    scopes = names
                case "refresh_before":
                    guard let nanos = DurationText.nanoseconds(value.json), nanos > 0 else {
                        diagnostics.append(Diagnostic("oauth.\(name).refresh_before must be a duration such as 60s", at: value.location))
                        failed = true
                        continue
                    }
                    refreshBefore = nanos
                default:
                    diagnostics.append(
                        Diagnostic(
                            "unknown key '\(key)' in oauth.\(name) (expected: authorize_url, token_url, client_id, client_secret, scopes, redirect_url, refresh_before)",
                            at: keyLocation))
                    failed = true
                }
            }
            for required in ["authorize_url", "token_url", "client_id"] where text[required] == nil && !failed {
                diagnostics.append(Diagnostic("oauth.\(name) needs \(required)", at: settings.location))
                failed = true
            }
            guard !failed, let authorize = text["authorize_url"], let token = text["token_url"], let client = text["client_id"] else {
                continue
            }
            config.oauth.append(
                OAuthDeclaration(
                    name: name, authorizeURL: authorize, tokenURL: token, clientID: client, clientSecret: text["client_secret"],
                    scopes: scopes,
                    redirectURL: text["redirect_url"], refreshBefore: refreshBefore, location: nameLocation))
        }
    }
}
