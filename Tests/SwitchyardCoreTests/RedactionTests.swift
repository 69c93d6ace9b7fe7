import SwitchyardCore
import Testing

@Suite struct RedactionTests {
    @Test(arguments: [
        ("connect to mqtt://bridge:hunter22@broker.example:8883 failed", "connect to mqtt://bridge:***@broker.example:8883 failed"),
        ("GET https://api.example/v1?access_token=abc.def&x=1", "GET https://api.example/v1?access_token=***&x=1"),
        ("header Authorization: Bearer eyJhbGciOi.x.y refused", "header Authorization: Bearer *** refused"),
        ("{\"password\": \"s3cret\", \"user\": \"bob\"}", "{\"password\": \"***\", \"user\": \"bob\"}"),
        ("client_secret=zzz9 grant", "client_secret=*** grant"),
        ("plain http://host:8080/path stays", "plain http://host:8080/path stays"),
        // Ordinary words after a secret-like name in a path or a sentence stay (issue 34).
        (
            "refused plugin /etc/passwd: dlopen failed: /etc/passwd: invalid ELF header",
            "refused plugin /etc/passwd: dlopen failed: /etc/passwd: invalid ELF header"
        ),
        ("without a token: set admin.token", "without a token: set admin.token"),
        ("  password: hunter2\n", "  password: ***\n"),
        ("login failed, password: hunter2", "login failed, password: ***"),
        ("[token: abc123]", "[token: ***]"),
        ("error: cannot connect at 12:30", "error: cannot connect at 12:30"),
    ])
    func secretShapesAreMasked(input: String, expected: String) {
        #expect(Redaction.redact(input, secrets: []) == expected)
    }

    @Test func registeredValuesAreMaskedWherever() {
        #expect(Redaction.redact("the key is Zq9-long-value, really", secrets: ["Zq9-long-value"]) == "the key is ***, really")
        #expect(Redaction.redact("ab", secrets: ["ab"]) == "ab" || Redaction.redact("ab", secrets: ["ab"]) == "***")
    }
}
