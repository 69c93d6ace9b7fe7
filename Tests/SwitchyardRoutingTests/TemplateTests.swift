import SwitchyardCore
import SwitchyardRouting
import Testing

private let templateBody = """
    {"name": "Kitchen", "count": 3, "temp": 21.5, "html": "<b>&\\"'</b>", "flag": true, "nothing": null,
     "items": [{"id": 1}, {"id": 2}], "tags": ["indoor", "celsius"], "obj": {"a": [1, "x"]}, "empty": []}
    """

private func envelope(body: String = templateBody, contentType: String = "application/json", session: String = "") -> Envelope {
    Envelope(
        id: "01ARYZ6S410000000000000000",
        type: "sensor.Reading",
        source: "probe.out",
        subject: "sensors/kitchen",
        time: 1_700_000_000_123_000_000,
        headers: ["mqtt.qos": "1", "mqtt.retain": "false", "x-request-id": "abc-123"],
        contentType: contentType,
        body: Array(body.utf8),
        trace: ["probe"],
        session: Array(session.utf8)
    )
}

private let base = SwitchyardCore.SourceLocation(file: "routes.yaml", line: 7, column: 15)

private func render(_ source: String, _ value: Envelope = envelope()) throws -> JSONValue {
    let template = try Template(parsing: source, at: base)
    var scope = EnvelopeScope(value)
    return template.render(&scope)
}

private func text(_ source: String, _ value: Envelope = envelope()) throws -> String {
    let template = try Template(parsing: source, at: base)
    var scope = EnvelopeScope(value)
    return template.renderText(&scope)
}

private func parseError(_ source: String, at location: SwitchyardCore.SourceLocation? = base) -> Diagnostic? {
    do throws(Diagnostic) {
        _ = try Template(parsing: source, at: location)
        return nil
    } catch {
        return error
    }
}

@Suite struct TemplateRenderingTests {
    @Test func rendersBodyFields() throws {
        #expect(try text("{{body.name}} has {{body.count}} items at {{body.temp}}°") == "Kitchen has 3 items at 21.5°")
        #expect(try render("n={{body.count}}") == .string("n=3"))
        #expect(try text("[{{body.missing}}]") == "[]")
        #expect(try text("[{{body.nothing}}]") == "[]")
        #expect(try text("{{body.flag}}") == "true")
    }

    /// `body.items.0` is a field path (see EnvelopeField); it reads the same inside text.
    @Test func arrayIndexPaths() throws {
        #expect(try render("{{body.obj.a.1}}") == .string("x"))
        #expect(try render("{{body.items.1.id}}") == .int(2))
        let member = try text("v={{body.obj.a.1}}")
        #expect(member == "v=x")
        let nested = try text("id={{body.items.1.id}}")
        #expect(nested == "id=2")
    }

    @Test func rendersEnvelopeFields() throws {
        #expect(try text("{{id}}|{{type}}|{{source}}|{{subject}}") == "01ARYZ6S410000000000000000|sensor.Reading|probe.out|sensors/kitchen")
        #expect(try text("at {{time}} as {{contentType}}") == "at 2023-11-14T22:13:20.123Z as application/json")
    }

    @Test func headersWithDotsInTheirNames() throws {
        #expect(try text("qos={{headers.mqtt.qos}} retain={{headers.mqtt.retain}}") == "qos=1 retain=false")
        #expect(try text("{{headers.x-request-id}}!") == "abc-123!")
        #expect(try text("[{{headers.mqtt.nope}}][{{headers.absent}}]") == "[][]")
        #expect(try render("{{headers.mqtt.qos}}") == .string("1"))
    }

    @Test func neverEscapesHTML() throws {
        #expect(try text("v: {{body.html}}") == "v: <b>&\"'</b>")
        #expect(try text("v: {{{body.html}}}") == "v: <b>&\"'</b>")
        #expect(try text("v: {{&body.html}}") == "v: <b>&\"'</b>")
        #expect(try text("<b>&amp; {{body.name}}</b>") == "<b>&amp; Kitchen</b>")
    }

    @Test func oneTagTemplateKeepsTheJSONType() throws {
        #expect(try render("{{body.count}}") == .int(3))
        #expect(try render("{{ body.count }}") == .int(3))
        #expect(try render("{{body.temp}}") == .double(21.5))
        #expect(try render("{{body.flag}}") == .bool(true))
        #expect(try render("{{body.obj}}") == ["a": [1, "x"]])
        #expect(try render("{{body.tags}}") == ["indoor", "celsius"])
        #expect(try render("{{body.missing}}") == .null)
        #expect(try render("{{trace}}") == ["probe"])
        #expect(try render("{{body.name}}") == .string("Kitchen"))
        // Anything around the tag makes it text.
        #expect(try render(" {{body.count}}") == .string(" 3"))
        #expect(try render("{{body.count}}{{body.count}}") == .string("33"))
    }

    @Test func wholeBody() throws {
        let object = try render("{{body}}")
        #expect(object["count"] == .int(3))
        let embedded = try text("b={{body.obj}}")
        #expect(embedded == #"b={"a":[1,"x"]}"#)
        let plain = envelope(body: "just text", contentType: "text/plain")
        #expect(try render("{{body}}", plain) == .string("just text"))
        #expect(try text("<{{body}}>", plain) == "<just text>")
    }

    @Test func sectionsIterateArrays() throws {
        #expect(try text("{{#body.items}}[{{id}}]{{/body.items}}") == "[1][2]")
        #expect(try text("{{#body.tags}}{{.}},{{/body.tags}}") == "indoor,celsius,")
        #expect(try text("{{#body.empty}}x{{/body.empty}}done") == "done")
        #expect(try text("{{^body.empty}}none{{/body.empty}}") == "none")
        #expect(try text("{{^body.missing}}absent{{/body.missing}}") == "absent")
        #expect(try text("{{#body.flag}}yes{{/body.flag}}") == "yes")
    }

    @Test func sessionFields() throws {
        let withSession = envelope(session: #"{"user": "ann", "n": 2}"#)
        #expect(try text("{{session.user}}/{{session.n}}", withSession) == "ann/2")
        #expect(try render("{{session.n}}", withSession) == .int(2))
        #expect(try text("[{{session.user}}]") == "[]")
    }

    @Test func textWithoutTags() throws {
        let template = try Template(parsing: "plain text", at: nil)
        #expect(template.fieldReads.isEmpty)
        var scope = EnvelopeScope(envelope())
        #expect(template.render(&scope) == .string("plain text"))
        #expect(template.source == "plain text")
    }

    @Test func commentsAreIgnored() throws {
        let rendered = try text("a{{! a note }}b")
        #expect(rendered == "ab")
        let template = try Template(parsing: "a{{! a note }}b", at: nil)
        #expect(template.fieldReads.isEmpty)
    }
}

/// `{{json(field)}}` writes a field as JSON text, so a template can build valid JSON from text
/// that holds quotes and line breaks.
@Suite struct TemplateJSONTests {
    private let tricky = #"{"text": "ping \"bob\"\r\nbye", "count": 3, "flag": false, "list": [1, "a"]}"#

    @Test func stringsAreQuotedAndEscaped() throws {
        let out = try text(#"{"text": {{json(body.text)}}, "from": {{json(subject)}}}"#, envelope(body: tricky))
        #expect(out == #"{"text": "ping \"bob\"\r\nbye", "from": "sensors/kitchen"}"#)
        let parsed = try JSONValue(parsing: Array(out.utf8))
        #expect(parsed["text"] == .string("ping \"bob\"\r\nbye"))
    }

    @Test func numbersBooleansArraysAndAbsentFields() throws {
        let out = try text(
            "[{{json(body.count)}}, {{json(body.flag)}}, {{json(body.list)}}, {{json(body.nope)}}, {{json(headers.mqtt.qos)}}]",
            envelope(body: tricky))
        #expect(out == #"[3, false, [1,"a"], null, "1"]"#)
    }

    @Test func aOneTagJSONTemplateIsText() throws {
        #expect(try render("{{json(body.name)}}") == .string(#""Kitchen""#))
        #expect(try render("{{ json( body.count ) }}") == .string("3"))
        #expect(try render("{{{json(body.name)}}}") == .string(#""Kitchen""#))
    }

    @Test func readsAreCheckedAndInsideSectionsRefused() throws {
        #expect(try Template(parsing: "{{json(body.name)}}", at: base).fieldReads.map(\.offset) == [7])
        #expect(parseError("x {{json(bdy.name)}}")?.message.contains("'bdy.name'") == true)
        let inSection = parseError("{{#body.items}}{{json(id)}}{{/body.items}}")
        #expect(inSection?.message.contains("inside a section") == true)
    }

    @Test func percentEncodedTemplatesEncodeTheJSONText() throws {
        let template = try Template(parsing: "https://x.test/?q={{json(body.name)}}", at: base, escaping: .percentEncoded)
        var scope = EnvelopeScope(envelope())
        #expect(template.renderText(&scope) == "https://x.test/?q=%22Kitchen%22")
    }
}

@Suite struct TemplateAnalysisTests {
    @Test func fieldReadsCarryOffsets() throws {
        let template = try Template(parsing: "a {{body.x}} b {{subject}}", at: nil)
        #expect(template.fieldReads.map(\.field.description) == ["body.x", "subject"])
        #expect(template.fieldReads.map(\.offset) == [4, 17])
        #expect(template.fieldReads.first?.field == .body(["x"]))
    }

    @Test func offsetsSkipSpacesAndSigilsAndCountCharacters() throws {
        let template = try Template(parsing: "é{{ body.a }}{{{body.b}}}{{&headers.mqtt.qos}}", at: nil)
        #expect(template.fieldReads.map(\.field.description) == ["body.a", "body.b", "headers.mqtt.qos"])
        #expect(template.fieldReads.map(\.offset) == [4, 16, 28])
        #expect(template.fieldReads.last?.field == .headers("mqtt.qos"))
    }

    @Test func readsInsideSectionsAreNotFieldReads() throws {
        let template = try Template(parsing: "{{#body.items}}{{id}}{{/body.items}} {{type}}", at: nil)
        #expect(template.fieldReads.map(\.field.description) == ["body.items", "type"])
        #expect(template.fieldReads.map(\.offset) == [3, 39])
    }

    @Test func unknownRootIsADiagnosticAtTheTag() throws {
        let error = try #require(parseError("ab {{bdy.x}}"))
        #expect(error.message.contains("'bdy.x'"))
        #expect(error.message.contains("not an envelope field"))
        #expect(error.location == base.advanced(by: 5))
        #expect(error.location == SwitchyardCore.SourceLocation(file: "routes.yaml", line: 7, column: 20))
    }

    @Test func unknownRootWithoutLocation() throws {
        let error = try #require(parseError("{{nope}}", at: nil))
        #expect(error.location == nil)
        #expect(error.message.contains("'nope'"))
    }

    @Test(arguments: ["{{id.x}}", "{{body..x}}", "{{subject.more}}", "{{#bdy}}x{{/bdy}}"])
    func otherInvalidFields(source: String) {
        #expect(parseError(source) != nil)
    }

    @Test func unclosedTag() throws {
        let error = try #require(parseError("abc {{body.x"))
        #expect(error.message == "unclosed template tag")
        #expect(error.location == base.advanced(by: 4))
        let triple = try #require(parseError("x {{{body.x}}"))
        #expect(triple.message == "unclosed template tag")
        #expect(triple.location == base.advanced(by: 2))
    }

    @Test func mustacheSyntaxErrorIsADiagnostic() throws {
        let source = "{{#body.a}}x{{/body.b}}"
        let error = try #require(parseError(source))
        #expect(error.message.hasPrefix("invalid template:"))
        let location = try #require(error.location)
        #expect(location.file == base.file)
        #expect(location.line == base.line)
        #expect(location.column >= base.column && location.column <= base.column + source.count)
    }

    @Test func mismatchedSectionOnUnknownNameIsADiagnostic() {
        #expect(parseError("{{#a}}x{{/b}}") != nil)
    }

    @Test func unclosedSectionIsADiagnostic() throws {
        let error = try #require(parseError("{{#body.items}}x"))
        // A sentence, not the parser's enum case (issue 34).
        #expect(error.message.hasPrefix("invalid template: a section is opened ({{#name}} or {{^name}}) but never closed"))
        #expect(!error.message.contains("expectedSectionEnd"))
    }
}
