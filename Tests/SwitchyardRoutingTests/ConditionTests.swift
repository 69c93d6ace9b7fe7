import SwitchyardCore
import SwitchyardRouting
import Testing

private let sampleBody = """
    {"temp": 21.5, "count": 3, "name": "Kitchen Sensor", "tags": ["indoor", "celsius"],
     "items": [{"id": 1}, {"id": 2}], "odd key": "yes", "delta": -2.5, "empty": "", "zero": 0,
     "nothing": null, "flag": true, "nested": {"a": {"b": "deep"}}, "code": "42"}
    """

private func sample(body: String = sampleBody) -> Envelope {
    Envelope(
        type: "sensor.Reading",
        subject: "sensors/kitchen/temp",
        headers: ["mqtt.qos": "1", "mqtt.retain": "false", "x-request-id": "abc-123", "ratio": "0.5"],
        body: Array(body.utf8)
    )
}

/// Parses and evaluates `expression` against `envelope`.
private func check(_ expression: String, _ envelope: Envelope = sample()) throws -> Bool {
    let condition = try Condition(parsing: expression, at: nil)
    var scope = EnvelopeScope(envelope)
    return condition.evaluate(&scope)
}

/// The diagnostic parsing `expression` throws, or `nil` when it parses.
private func parseError(_ expression: String, at location: SwitchyardCore.SourceLocation? = nil) -> Diagnostic? {
    do throws(Diagnostic) {
        _ = try Condition(parsing: expression, at: location)
        return nil
    } catch {
        return error
    }
}

private let routeFile = SwitchyardCore.SourceLocation(file: "routes.yaml", line: 12, column: 11)

@Suite struct ConditionTests {
    // MARK: Comparisons

    @Test func numericComparisons() throws {
        #expect(try check("body.temp > 20"))
        #expect(try check("body.temp >= 21.5"))
        #expect(try check("body.temp <= 21.5"))
        #expect(try !check("body.temp < 21.5"))
        #expect(try check("body.count == 3.0"))
        #expect(try check("body.count != 4"))
        #expect(try check("body.delta < -2"))
    }

    @Test func stringComparisons() throws {
        #expect(try check(#"subject == "sensors/kitchen/temp""#))
        #expect(try check("type != 'mqtt.Message'"))
        #expect(try check(#"body.name > "Apple""#))
        // Two strings compare as text even when they look like numbers.
        #expect(try check(#""10" < "9""#))
        #expect(try !check(#""1" == "1.0""#))
    }

    @Test func headerValuesCompareAsNumbers() throws {
        #expect(try check("headers.mqtt.qos == 1"))
        #expect(try check("headers.mqtt.qos == 1.0"))
        #expect(try check(#"headers.mqtt.qos == "1""#))
        #expect(try check("headers.mqtt.qos >= 1 and headers.mqtt.qos < 2"))
        #expect(try check("headers.ratio > 0.25"))
        #expect(try check("body.code == 42"))
        #expect(try !check("headers.mqtt.qos == 2"))
    }

    @Test func mismatchedTypesAreUnequalAndUnordered() throws {
        #expect(try !check("subject == 1"))
        #expect(try check("subject != 1"))
        #expect(try !check("body.flag == 1"))
        #expect(try !check(#"body.temp < "abc""#))
        #expect(try !check(#"body.temp >= "abc""#))
        #expect(try !check("body.tags > 1"))
        #expect(try !check("body.nested <= body.nested"))
    }

    @Test func containerEquality() throws {
        #expect(try check("body.nested == body.nested"))
        #expect(try check("body.items.0 != body.items.1"))
    }

    // MARK: Operators

    @Test func containsOnStringsAndArrays() throws {
        #expect(try check("subject contains 'kitchen'"))
        #expect(try !check("subject contains 'garage'"))
        #expect(try check("body.tags contains 'indoor'"))
        #expect(try !check("body.tags contains 'outdoor'"))
        #expect(try check("trace contains 'x'", Envelope(type: "t", trace: ["x", "y"])))
        #expect(try !check("body.temp contains '21'"))
    }

    @Test func startsWithAndEndsWith() throws {
        #expect(try check("subject startsWith 'sensors/'"))
        #expect(try check("subject endsWith '/temp'"))
        #expect(try !check("subject startsWith 'temp'"))
        #expect(try !check("body.count startsWith '3'"))
    }

    @Test func regularExpressions() throws {
        #expect(try check(#"subject matches "^sensors/[a-z]+/temp$""#))
        #expect(try check(#"subject matches "kitchen""#))
        #expect(try !check(#"subject matches "^kitchen""#))
        #expect(try check(#"headers.x-request-id matches "^[a-z]+-\\d+$""#))
        #expect(try !check(#"body.count matches "3""#))
    }

    @Test func membershipInArrayLiterals() throws {
        #expect(try check("headers.mqtt.qos in [0, 1]"))
        #expect(try check(#"type in ["sensor.Reading", "mqtt.Message"]"#))
        #expect(try check("body.delta in [-2.5, 7]"))
        #expect(try !check("body.count in []"))
        #expect(try check("body.nothing in [null]"))
        #expect(try check("body.nope in [null, false]"))
    }

    // MARK: Boolean structure

    @Test func connectivesAndTheirSpellings() throws {
        #expect(try check("body.temp > 20 and subject contains 'kitchen'"))
        #expect(try check("body.temp > 20 && subject contains 'kitchen'"))
        #expect(try check("body.temp > 30 or body.count == 3"))
        #expect(try check("body.temp > 30 || body.count == 3"))
        #expect(try check("not (body.temp > 30)"))
        #expect(try check("!(body.temp > 30)"))
        #expect(try check("not not true"))
    }

    @Test func precedence() throws {
        // `and` binds tighter than `or`.
        #expect(try check("true or true and false"))
        #expect(try !check("(true or true) and false"))
        #expect(try !check("false and true or false"))
        // `not` binds tighter than `and`.
        #expect(try !check("not false and false"))
        #expect(try check("not (false and false)"))
        // Comparisons bind tighter than `and`/`or`.
        #expect(try check("body.count == 3 or body.count == 4 and false"))
    }

    @Test func truthinessInBooleanPosition() throws {
        #expect(try check("body.flag"))
        #expect(try check("body.name"))
        #expect(try check("body.tags and body.nested"))
        #expect(try !check("body.empty"))
        #expect(try !check("body.zero"))
        #expect(try !check("body.nothing"))
        #expect(try !check("body.missing"))
        #expect(try check("not body.missing"))
        #expect(try check("headers.mqtt.retain"))  // a non-empty string, even "false"
    }

    // MARK: Fields

    @Test func missingFieldsReadAsNull() throws {
        #expect(try check("body.nope == null"))
        #expect(try check("body.nothing == null"))
        #expect(try !check("body.nope > 1"))
        #expect(try check("body.nope != 1"))
        #expect(try check("headers.absent == null"))
        #expect(try !check("body.temp.deeper == 1"))
        #expect(try !check("body.items.9.id == 1"))
    }

    @Test func pathsAndBracketAccess() throws {
        #expect(try check(#"headers["mqtt.qos"] == 1"#))
        #expect(try check("headers['x-request-id'] == 'abc-123'"))
        #expect(try check("headers.x-request-id == 'abc-123'"))
        #expect(try check(#"body["odd key"] == "yes""#))
        #expect(try check("body.items.1.id == 2"))
        #expect(try check("body.items[0].id == 1"))
        #expect(try check(#"body["nested"].a["b"] == "deep""#))
        #expect(try check("headers.mqtt['qos'] == 1"))
    }

    @Test func nonJSONBodyIsAString() throws {
        let text = sample(body: "plain text, not JSON")
        #expect(try check("body startsWith 'plain'", text))
        #expect(try check("body.x == null", text))
    }

    // MARK: Literals

    @Test func literalsAndEscapes() throws {
        let envelope = Envelope(type: "t", subject: "it's \"quoted\" \\ with\ttab")
        #expect(try check(#"subject == 'it\'s "quoted" \\ with\ttab'"#, envelope))
        #expect(try check(#"subject == "it's \"quoted\" \\ with\ttab""#, envelope))
        #expect(try check("true"))
        #expect(try !check("false"))
        #expect(try !check("null"))
        #expect(try check("1.5 > 1"))
        #expect(try check("-body.delta == 2.5"))
        #expect(try check("-(-3) == 3"))
        #expect(try check("\"a\\nb\" contains \"\\n\""))
    }

    // MARK: Functions

    @Test func functions() throws {
        #expect(try check("exists(body.temp)"))
        #expect(try check("exists(body.nothing)"))  // present, even though null
        #expect(try !check("exists(body.nope)"))
        #expect(try check(#"exists(headers["mqtt.qos"]) and not exists(headers.other)"#))
        #expect(try check("len(body.name) == 14"))
        #expect(try check("len(body.tags) == 2 and len(body.nested) == 1"))
        #expect(try check("len(subject) > 10"))
        #expect(try check("len(body.temp) == null"))
        #expect(try check("lower(body.name) == 'kitchen sensor'"))
        #expect(try check("upper(body.name) contains 'KITCHEN'"))
        #expect(try check("lower(body.count) == null"))
    }

    // MARK: Syntax errors

    @Test func endOfInputIsReportedAtItsColumn() {
        let bare = parseError("body.x ==")
        #expect(bare?.location == nil)
        #expect(bare?.message.hasSuffix("at column 10") == true)
        #expect(bare?.message.contains("end of the condition") == true)

        let located = parseError("body.x ==", at: routeFile)
        #expect(located?.location == routeFile.advanced(by: 9))
        #expect(located?.message.contains("at column") == false)
    }

    @Test func unknownRootNamesItAndListsTheRoots() {
        let error = parseError("bdy.x == 1", at: routeFile)
        #expect(error?.location == routeFile.advanced(by: 0))
        #expect(error?.message.contains("'bdy'") == true)
        for root in EnvelopeField.roots {
            #expect(error?.message.contains(root) == true)
        }
        #expect(parseError("body.x == 1 and sbject == 'a'")?.message.hasSuffix("at column 17") == true)
    }

    @Test func unterminatedStringAndBadEscape() {
        let unterminated = parseError(#"subject == "abc"#, at: routeFile)
        #expect(unterminated?.message == "unterminated string")
        #expect(unterminated?.location == routeFile.advanced(by: 11))
        #expect(parseError(#"subject == 'abc\'"#)?.message == "unterminated string at column 12")

        let escape = parseError(#"subject == "a\qb""#)
        #expect(escape?.message.contains(#"'\q'"#) == true)
        #expect(escape?.message.hasSuffix("at column 14") == true)
    }

    @Test func invalidRegularExpression() {
        let error = parseError(#"subject matches "a(b""#, at: routeFile)
        #expect(error?.location == routeFile.advanced(by: 16))
        #expect(error?.message.contains("invalid regular expression 'a(b'") == true)

        let notLiteral = parseError("subject matches type")
        #expect(notLiteral?.message.contains("string literal") == true)
        #expect(notLiteral?.message.hasSuffix("at column 17") == true)
    }

    @Test func operatorAndStructureErrors() {
        #expect(parseError("subject = 'a'")?.message.hasPrefix("'=' is not an operator") == true)
        #expect(parseError("subject = 'a'")?.message.hasSuffix("at column 9") == true)
        #expect(parseError("a & b")?.message.hasSuffix("at column 3") == true)  // the lexer runs first
        #expect(parseError("true & false")?.message.hasSuffix("at column 6") == true)
        #expect(parseError("subject == 'a' 'b'")?.message.hasSuffix("at column 16") == true)
        #expect(parseError("(subject == 'a'")?.message.hasSuffix("at column 16") == true)
        #expect(parseError("body.count == 1 == 1")?.message.hasPrefix("comparisons cannot be chained") == true)
        #expect(parseError("body.count == 1 == 1")?.message.hasSuffix("at column 17") == true)
        #expect(parseError("not body.count == 1")?.message.contains("binds tighter") == true)
        #expect(parseError("")?.message == "the condition is empty at column 1")
        #expect(parseError("body.x == and")?.message.hasSuffix("at column 11") == true)
        #expect(parseError("type.x == 1")?.message.contains("'type' has no members") == true)
        #expect(parseError("type.x == 1")?.message.hasSuffix("at column 5") == true)
        #expect(parseError("body.x == 12ab")?.message.hasPrefix("invalid number '12ab'") == true)
        #expect(parseError("body.x @ 1")?.message.hasSuffix("at column 8") == true)
        #expect(parseError("body[x] == 1")?.message.hasSuffix("at column 6") == true)
        #expect(parseError("[1] == body.x")?.message.contains("only allowed after 'in'") == true)
        #expect(parseError("-'a' == 1")?.message.hasSuffix("at column 1") == true)
    }

    @Test func membershipAndFunctionErrors() {
        #expect(parseError("body.x in 1")?.message.contains("array literal") == true)
        #expect(parseError("body.x in [1, body.y]")?.message.hasSuffix("at column 15") == true)
        #expect(parseError("body.x in [1 2]")?.message.hasSuffix("at column 14") == true)
        #expect(parseError("size(body.x) > 1")?.message.contains("unknown function 'size'") == true)
        #expect(parseError("exists('body.x')")?.message.hasSuffix("at column 8") == true)
        #expect(parseError("len(body.x, body.y) > 1")?.message.hasSuffix("at column 11") == true)
        #expect(parseError("len(body.x > 1")?.message.hasSuffix("at column 15") == true)
    }

    @Test func nestingIsLimited() throws {
        let deep = String(repeating: "(", count: 65) + "true" + String(repeating: ")", count: 65)
        #expect(parseError(deep)?.message.contains("nests too deeply") == true)
        let allowed = String(repeating: "(", count: 60) + "true" + String(repeating: ")", count: 60)
        #expect(try check(allowed))
        let nots = String(repeating: "not ", count: 10_000) + "true"
        #expect(parseError(nots)?.message.contains("nests too deeply") == true)
        let calls = String(repeating: "len(", count: 100) + "subject" + String(repeating: ")", count: 100)
        #expect(parseError(calls)?.message.contains("nests too deeply") == true)
    }

    @Test func longChainsDoNotNest() throws {
        let chain = Array(repeating: "body.count == 3", count: 5_000).joined(separator: " and ")
        #expect(try check(chain))
        let either = Array(repeating: "body.count == 4", count: 5_000).joined(separator: " or ") + " or true"
        #expect(try check(either))
    }

    // MARK: Static information

    @Test func fieldReadsWithOffsets() throws {
        let condition = try Condition(
            parsing: #"headers.mqtt.qos == 1 and exists(body["odd key"]) or len(body.items.0.id) > subject"#,
            at: nil
        )
        let reads = condition.fieldReads
        #expect(reads.map(\.field) == [.headers("mqtt.qos"), .body(["odd key"]), .body(["items", "0", "id"]), .subject])
        #expect(reads.map(\.offset) == [0, 33, 57, 76])
        #expect(condition.source.hasPrefix("headers.mqtt.qos"))
        #expect(try Condition(parsing: "true", at: nil).fieldReads.isEmpty)
    }

    @Test func conditionIsReusableAcrossEnvelopes() throws {
        let condition = try Condition(parsing: "body.temp > 20", at: nil)
        var warm = EnvelopeScope(sample())
        var cold = EnvelopeScope(sample(body: #"{"temp": 4}"#))
        var empty = EnvelopeScope(Envelope(type: "t"))
        #expect(condition.evaluate(&warm))
        #expect(!condition.evaluate(&cold))
        #expect(!condition.evaluate(&empty))
    }
}
