import Hummingbird
import SwitchyardCore
import SwitchyardRuntime
import Testing

@testable import SwitchyardAdmin

/// Settings forms from preference schemas: the controls a schema asks for, and reading a posted
/// form back through the same schema.
@Suite struct ConsoleFormTests {
    static let schema: JSONValue = [
        "type": "object", "required": ["to"],
        "properties": [
            "to": ["type": "string", "pattern": "^sips?:", "description": "Who gets it"],
            "level": ["type": "string", "enum": ["low", "high"], "default": "low"],
            "loud": ["type": "boolean"],
            "retries": ["type": "integer", "minimum": 0, "maximum": 5],
            "extra": ["type": "object"],
        ],
    ]

    @Test func eachPropertyGetsTheControlItsSchemaAsksForRequiredFirst() {
        let form = ConsoleForm(piece: "action", schema: Self.schema)
        #expect(form.fields.map(\.key) == ["to", "extra", "level", "loud", "retries"])
        #expect(form.fields.map(\.kind) == [.text, .json, .select, .checkbox, .number])
        #expect(!form.wholeJSON)
    }

    @Test func aScriptPiecesSourceIsEditedInAMultiLineCodeAreaAndReadBackAsText() throws {
        let schema: JSONValue = try #require(BuiltinPieces.preferenceSchema(of: "script"))
        let form = ConsoleForm(piece: "service", schema: schema)
        #expect(form.fields.first { $0.key == "source" }?.kind == .code)
        let view = form.view(values: ["source": "return envelope"])
        let fields = try #require(view["fields"] as? [[String: Any]])
        let source = try #require(fields.first { $0["name"] as? String == "service.source" })
        #expect(source["is_code"] as? Bool == true)
        #expect(source["value"] as? String == "return envelope")
        let lua = "local n = envelope.body.count\nreturn { body = { n = n } }"
        let (value, errors) = form.read(["service.source": lua, "service.state": "persistent"])
        #expect(errors.isEmpty, "\(errors)")
        #expect(value == ["source": .string(lua), "state": "persistent"])
    }

    @Test func theViewStartsFromTheDefaultsAndShowsHelpAndBounds() throws {
        let view = ConsoleForm(piece: "action", schema: Self.schema).view(values: ["to": "sip:bob@example.org"])
        let fields = try #require(view["fields"] as? [[String: Any]])
        let to = try #require(fields.first { $0["name"] as? String == "action.to" })
        #expect(to["value"] as? String == "sip:bob@example.org")
        #expect(to["help"] as? String == "Who gets it")
        #expect(to["required"] as? Bool == true)
        let level = try #require(fields.first { $0["name"] as? String == "action.level" })
        let options = try #require(level["options"] as? [[String: Any]])
        #expect(options.compactMap { $0["selected"] as? Bool } == [true, false])
        let retries = try #require(fields.first { $0["name"] as? String == "action.retries" })
        #expect(retries["min"] as? String == "0")
        #expect(retries["max"] as? String == "5")
        #expect(retries["step"] as? String == "1")
    }

    @Test func aPostedFormIsReadByTheSchemaTypes() {
        let form = ConsoleForm(piece: "action", schema: Self.schema)
        let (value, errors) = form.read([
            "action.to": "sip:ann@example.org", "action.level": "high", "action.loud": "true", "action.retries": "3",
            "action.extra": "{\"a\": [1]}",
        ])
        #expect(errors.isEmpty)
        #expect(
            value == ["to": "sip:ann@example.org", "level": "high", "loud": true, "retries": 3, "extra": ["a": [1]]])
        // An unchecked checkbox is absent from the form: false.
        #expect(form.read(["action.to": "sip:x"]).value?["loud"] == false)
    }

    @Test func valuesTheSchemaCannotReadAreNamedAtTheirField() {
        let form = ConsoleForm(piece: "service", schema: Self.schema)
        let (value, errors) = form.read([
            "service.to": "sip:x", "service.level": "medium", "service.retries": "2.5", "service.extra": "{not json",
        ])
        #expect(value == nil)
        #expect(
            errors == [
                "service.level": "must be one of the listed values", "service.retries": "must be a whole number",
                "service.extra": "is not JSON",
            ])
    }

    @Test func withoutASchemaThePreferencesAreOneJSONObject() {
        let form = ConsoleForm(piece: "action", schema: nil)
        #expect(form.wholeJSON)
        #expect(form.read(["action.json": "{\"note\": \"hi\"}"]).value == ["note": "hi"])
        #expect(form.read(["action.json": "[1, 2]"]).errors == ["action": "must be a JSON object"])
        #expect(form.view(values: ["a": 1])["json_value"] as? String == "{\"a\":1}")
    }
}

/// Sign-in, sessions and where a sign-in may send the browser back to.
@Suite struct ConsoleSessionTests {
    @Test func onlyTheAdminTokenOpensASessionAndEachSessionHasItsOwnCSRFToken() {
        let sessions = ConsoleSessions(token: "s3cret")
        #expect(sessions.requiresLogin)
        #expect(sessions.logIn(offering: "s3cre") == nil)
        #expect(sessions.logIn(offering: "s3cret-") == nil)
        let first = sessions.logIn(offering: "s3cret")
        let second = sessions.logIn(offering: "s3cret")
        #expect(first != nil && second != nil && first != second)
        #expect(first?.count == 43)  // 32 random bytes, base64url without padding
    }

    @Test func tenWrongTokensInAMinuteStopFurtherSignIns() {
        let sessions = ConsoleSessions(token: "s3cret")
        for _ in 1..<ConsoleSessions.failuresPerMinute { #expect(sessions.logIn(offering: "guess") == nil) }
        #expect(!sessions.isThrottled)
        #expect(sessions.logIn(offering: "guess") == nil)
        #expect(sessions.isThrottled)
    }

    @Test func withoutATokenNoLoginIsNeeded() {
        #expect(!ConsoleSessions(token: nil).requiresLogin)
        #expect(!ConsoleSessions(token: "").requiresLogin)
        #expect(ConsoleSessions(token: nil).logIn(offering: "") == nil)
    }

    @Test func theCSRFCheckWantsTheExactToken() {
        let session = ConsoleSessions.Session(csrf: "abc", expiresAt: .now)
        #expect(ConsoleSessions.csrfMatches("abc", session))
        #expect(!ConsoleSessions.csrfMatches("abcd", session))
        #expect(!ConsoleSessions.csrfMatches(nil, session))
        #expect(!ConsoleSessions.csrfMatches("", session))
    }

    @Test(arguments: [
        ("/console/graph", "/console/graph"), ("/console/iiideas/a?x=1", "/console/iiideas/a?x=1"),
        ("https://evil.example/console", "/console/iiideas"), ("//evil.example/console", "/console/iiideas"),
        ("/consolex/../v1", "/console/iiideas"), ("/console/../v1", "/console/iiideas"), ("/console\\@evil", "/console/iiideas"),
        ("/console/\r\nSet-Cookie: x", "/console/iiideas"),
        ("/v1/iiideas", "/console/iiideas"),
    ])
    func aSignInReturnsOnlyToAConsolePath(next: String, expected: String) {
        #expect(Console.localPath(next) == expected)
    }

    @Test func theCookieIsHTTPOnlyAndStrict() {
        let cookie = ConsoleSessions.cookie("value")
        #expect(cookie.httpOnly)
        #expect(cookie.sameSite == .strict)
        #expect(cookie.path == "/")
        #expect(ConsoleSessions.cookie(nil).maxAge == 0)
    }
}
