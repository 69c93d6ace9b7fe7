import SwitchyardConfig
import SwitchyardCore
import SwitchyardRouting
import Testing

@testable import SwitchyardRuntime

private func validate(_ yaml: String, environment: [String: String] = [:]) throws -> (GraphPlan?, [Diagnostic]) {
    try validated(yaml, environment: environment)
}

/// Expects exactly one diagnostic, with `message`, at `line`:`column` of g.yaml.
private func expectOnly(
    _ yaml: String, _ message: String, line: Int, column: Int, sourceLocation: Testing.SourceLocation = #_sourceLocation
) throws {
    let (plan, diagnostics) = try validate(yaml)
    #expect(plan == nil, sourceLocation: sourceLocation)
    #expect(diagnostics.count == 1, "\(diagnostics)", sourceLocation: sourceLocation)
    let found = diagnostics.first { $0.message == message }
    #expect(found != nil, "no diagnostic '\(message)' in \(diagnostics)", sourceLocation: sourceLocation)
    #expect(found?.location == SwitchyardCore.SourceLocation(file: "g.yaml", line: line, column: column), sourceLocation: sourceLocation)
}

private let instances = """
    instances:
      a: { plugin: fake }
      b: { plugin: fake, extra: {} }
    """

@Suite struct GraphValidatorTests {
    @Test func unknownPlugin() throws {
        let yaml = """
            instances:
              a: { plugin: fake }
              c: { plugin: nope }
            """
        try expectOnly(yaml, "instance 'c': unknown plugin 'nope' (loaded: fake)", line: 3, column: 16)
    }

    @Test func routesToAnInstanceWhosePluginFailedAreNotReportedTwice() throws {
        let yaml = """
            instances:
              a: { plugin: fake }
              c: { plugin: nope }
            routes:
              - { from: a.out, to: c.any }
            """
        let (_, diagnostics) = try validate(yaml)
        #expect(diagnostics.map(\.message) == ["instance 'c': unknown plugin 'nope' (loaded: fake)"])
    }

    @Test func configViolationsPointAtTheKey() throws {
        let yaml = """
            instances:
              a:
                plugin: fake
                n: "seven"
                bogus: 1
                extra: 5
            """
        let (plan, diagnostics) = try validate(yaml)
        #expect(plan == nil)
        #expect(diagnostics.count == 3)
        let byMessage = Dictionary(diagnostics.map { ($0.message, $0.location) }, uniquingKeysWith: { first, _ in first })
        #expect(
            byMessage["instance 'a' (plugin fake): n expected integer, found string"] == .some(.init(file: "g.yaml", line: 4, column: 5)))
        #expect(
            byMessage["instance 'a' (plugin fake): bogus is not a known field (known: extra, n)"]
                == .some(.init(file: "g.yaml", line: 5, column: 5)))
        #expect(
            byMessage["instance 'a' (plugin fake): extra expected object, found integer"]
                == .some(.init(file: "g.yaml", line: 6, column: 5)))
    }

    @Test func unsetVariableCausesNoFollowOnConfigError() throws {
        let yaml = "instances:\n  a:\n    plugin: fake\n    n: ${UNSET_N}\n    bogus: 1\n"
        let (config, loadProblems) = ConfigLoader(environment: [:]).load(sources: [(file: "g.yaml", text: yaml)])
        #expect(loadProblems.map(\.message) == ["environment variable 'UNSET_N' is not set (used as ${UNSET_N})"])
        let (_, diagnostics) = GraphValidator(plugins: [try loadFakePlugin()]).validate(config)
        #expect(diagnostics.map(\.message) == ["instance 'a' (plugin fake): bogus is not a known field (known: extra, n)"])
    }

    @Test func unknownInstance() throws {
        let yaml = instances + "\nroutes:\n  - from: ghost.out\n    to: b.any\n"
        try expectOnly(yaml, "unknown instance 'ghost' (instances: a, b)", line: 5, column: 11)
    }

    @Test func unknownPortListsThePorts() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: b.nope\n"
        try expectOnly(yaml, "instance 'b' (plugin fake) has no port 'nope' (ports: out, in, any, opt, either)", line: 6, column: 9)
    }

    @Test func fromNeedsASource() throws {
        let yaml = instances + "\nroutes:\n  - from: a.any\n    to: b.any\n"
        try expectOnly(yaml, "'from' needs a source port; a.any is a sink", line: 5, column: 11)
    }

    @Test func toNeedsASink() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: [b.any, b.out]\n"
        try expectOnly(yaml, "'to' needs a sink port; b.out is a source", line: 6, column: 17)
    }

    @Test func portThatNeedsASetting() throws {
        let yaml = instances + "\nroutes:\n  - from: a.opt\n    to: b.any\n"
        try expectOnly(yaml, "port a.opt exists only when instance 'a' has a 'extra' setting", line: 5, column: 11)
        let (plan, diagnostics) = try validate(instances + "\nroutes:\n  - from: b.opt\n    to: a.any\n")
        #expect(diagnostics.isEmpty)
        #expect(plan?.instances.first { $0.name == "b" }?.ports.map(\.name) == ["out", "in", "any", "opt", "either"])
        #expect(plan?.instances.first { $0.name == "a" }?.ports.map(\.name) == ["out", "in", "any", "either"])
    }

    @Test func typeMismatch() throws {
        let yaml = instances + "\nroutes:\n  - name: wrong\n    from: a.out\n    to: b.in\n"
        try expectOnly(yaml, "b.in accepts t.B, but route 'wrong' delivers t.A", line: 7, column: 9)
    }

    @Test func conditionReadingAMissingField() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: b.any\n    when: body.x == 1 and body.nope == 1\n"
        try expectOnly(yaml, "condition reads body.nope, but type t.A has no field 'nope' (fields: x, y)", line: 7, column: 27)
    }

    @Test func conditionSyntaxErrorIsPlacedInTheFile() throws {
        let (plan, diagnostics) = try validate(instances + "\nroutes:\n  - from: a.out\n    to: b.any\n    when: body.x ==\n")
        #expect(plan == nil)
        #expect(diagnostics.count == 1)
        #expect(diagnostics.first?.location?.line == 7)
        #expect((diagnostics.first?.location?.column ?? 0) >= 11)
    }

    @Test func templateReadingAMissingField() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: b.any\n    template: \"v={{body.w}}\"\n"
        try expectOnly(yaml, "template reads body.w, but type t.A has no field 'w' (fields: x, y)", line: 7, column: 20)
    }

    @Test func mapMissingARequiredField() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: b.in\n    map:\n      q: \"{{body.y}}\"\n"
        let (plan, diagnostics) = try validate(yaml)
        #expect(plan == nil)
        #expect(diagnostics.count == 2, "\(diagnostics)")
        let unknown = diagnostics.first { $0.message == "map does not build a t.B: q is not a field of it (fields: z)" }
        #expect(unknown?.location == SwitchyardCore.SourceLocation(file: "g.yaml", line: 8, column: 7))
        let required = diagnostics.first { $0.message == "map does not build a t.B: required field 'z' is not set" }
        #expect(required?.location?.line == 8)
    }

    @Test func mapWithAnUnknownKey() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: b.in\n    map:\n      z: \"{{body.y}}\"\n      extra: 1\n"
        try expectOnly(yaml, "map does not build a t.B: extra is not a field of it (fields: z)", line: 9, column: 7)
    }

    @Test func mapReadingAMissingField() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: b.in\n    map:\n      z: \"{{body.zz}}\"\n"
        try expectOnly(yaml, "map reads body.zz, but type t.A has no field 'zz' (fields: x, y)", line: 8, column: 13)
    }

    @Test func aPortOfSeveralTypesIsAUnion() throws {
        // z is a field of t.B only: fine, since the port may emit a t.B.
        let fits = instances + "\nroutes:\n  - from: a.either\n    to: b.in\n    map:\n      z: \"{{body.z}}\"\n"
        let (plan, diagnostics) = try validate(fits)
        #expect(plan != nil && diagnostics.isEmpty, "\(diagnostics)")
        // A field of neither type is reported for each.
        let neither = instances + "\nroutes:\n  - from: a.either\n    to: b.in\n    map:\n      z: \"{{body.q}}\"\n"
        let (_, problems) = try validate(neither)
        #expect(
            problems.map(\.message) == [
                "map reads body.q, but type t.A has no field 'q' (fields: x, y)",
                "map reads body.q, but type t.B has no field 'q' (fields: z)",
            ])
    }

    @Test func unknownOutputType() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: b.any\n    map: { x: 1 }\n    type: unknown.Type\n"
        try expectOnly(yaml, "unknown type 'unknown.Type'", line: 8, column: 11)
    }

    @Test func typeWithoutMapOrTemplate() throws {
        let yaml = instances + "\nroutes:\n  - from: a.out\n    to: b.any\n    type: t.A\n"
        try expectOnly(yaml, "'type' sets the type a map, template or script produces; this route has none of them", line: 7, column: 11)
    }

    @Test func cycleOfLoopAllowRoutes() throws {
        let yaml =
            instances + """

                routes:
                  - name: there
                    from: a.out
                    to: b.any
                    loop: allow
                  - name: back
                    from: b.out
                    to: a.any
                    loop: allow
                """
        try expectOnly(
            yaml,
            "routes there → back form a cycle with 'loop: allow' on every route: nothing stops an envelope going round",
            line: 5, column: 5
        )
    }

    @Test func cycleWithOneGuardedRouteIsAllowed() throws {
        let yaml =
            instances + """

                routes:
                  - { name: there, from: a.out, to: b.any, loop: allow }
                  - { name: back, from: b.out, to: a.any }
                """
        let (plan, diagnostics) = try validate(yaml)
        #expect(diagnostics.isEmpty)
        #expect(plan?.routes.count == 2)
    }

    @Test func yamlTypesAreRegisteredAndClashesReported() throws {
        let yaml =
            instances + """

                types:
                  - name: t.A
                    schema: { type: object }
                  - name: y.C
                    schema: { type: object, properties: { c: { type: string } }, required: [c] }
                routes:
                  - { from: a.out, to: b.any, map: { c: "{{body.y}}" }, type: y.C }
                """
        let (plan, diagnostics) = try validate(yaml)
        #expect(plan == nil)
        #expect(diagnostics.count == 1)
        #expect(diagnostics.first?.message.hasPrefix("type 't.A' is defined by plugin fake and again by g.yaml:") == true)
        #expect(diagnostics.first?.location?.line == 5)
    }

    @Test func validGraphProducesAPlan() throws {
        let yaml =
            instances + """

                types:
                  - name: y.C
                    schema: { type: object, properties: { c: { type: string } } }
                routes:
                  - name: plain
                    from: a.out
                    to: b.any
                    when: body.x > 1
                  - name: mapped-json
                    from: a.out
                    to: b.any
                    map: { copy: "{{body.x}}", fixed: 2, list: ["{{body.y}}", true] }
                  - name: templated
                    from: a.out
                    to: b.any
                    template: "x={{body.x}}"
                  - name: into-in
                    from: a.out
                    to: b.in
                    map: { z: "{{body.y}}" }
                  - name: typed
                    from: b.opt
                    to: [a.any, b.any]
                    map: { c: "{{body.y}}" }
                    type: y.C
                    content_type: application/vnd.c+json
                """
        let (plan, diagnostics) = try validate(yaml)
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let graph = try #require(plan)
        #expect(graph.instances.map(\.name) == ["a", "b"])
        #expect(graph.instances.map(\.plugin.manifest.name) == ["fake", "fake"])
        #expect(graph.instances.last?.config == ["extra": [:]])
        #expect(graph.routes.map(\.name) == ["plain", "mapped-json", "templated", "into-in", "typed"])
        #expect(graph.types["t.A"]?.origin == "plugin fake")
        #expect(graph.types["json"] != nil && graph.types["text"] != nil && graph.types["y.C"] != nil)
        let routes = Dictionary(graph.routes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(routes["plain"]?.condition != nil)
        #expect(routes["plain"]?.transform == nil)
        #expect(routes["mapped-json"]?.transform?.outputType == "json")
        #expect(routes["mapped-json"]?.transform?.contentType == "application/json")
        #expect(routes["templated"]?.transform?.outputType == "text")
        #expect(routes["templated"]?.transform?.contentType == "text/plain")
        #expect(routes["into-in"]?.transform?.outputType == "t.B")
        #expect(routes["typed"]?.transform?.outputType == "y.C")
        #expect(routes["typed"]?.transform?.contentType == "application/vnd.c+json")
    }

    @Test func transformsBuildTheirBodies() throws {
        let graph = try plan(
            instances + """

                routes:
                  - name: mapped
                    from: a.out
                    to: b.any
                    map: { copy: "{{body.x}}", fixed: 2, text: "y is {{body.y}}", list: ["{{body.y}}", true], nested: { s: "{{subject}}" } }
                  - name: templated
                    from: a.out
                    to: b.any
                    template: "x={{body.x}}"
                """,
            file: "g.yaml"
        )
        let input = Envelope(type: "t.A", subject: "subj", body: bodyA(x: 4, y: "why"))
        let mapped = try #require(graph.routes.first { $0.name == "mapped" }?.transform)
        var scope = EnvelopeScope(input)
        let output = mapped.apply(&scope)
        #expect(output.type == "json")
        #expect(output.contentType == "application/json")
        #expect(output.decodedBody() == ["copy": 4, "fixed": 2, "text": "y is why", "list": ["why", true], "nested": ["s": "subj"]])
        #expect(output.id == input.id)
        let templated = try #require(graph.routes.first { $0.name == "templated" }?.transform)
        var again = EnvelopeScope(input)
        let text = templated.apply(&again)
        #expect(text.bodyText == "x=4")
        #expect(text.type == "text")
        #expect(text.contentType == "text/plain")
    }

    static let secret = "Xy7-secret-Zq9"

    /// Values that came from `${VAR}` are secrets: validation must not print them either.
    @Test(arguments: [
        "instances:\n  a: { plugin: \"${S}\" }\n",
        "instances:\n  a: { plugin: fake }\n  b: { plugin: fake }\nroutes:\n  - { from: \"a.${S}\", to: b.any }\n",
        "instances:\n  a: { plugin: fake }\n  b: { plugin: fake }\nroutes:\n  - { from: a.out, to: b.any, when: \"${S} == 1\" }\n",
        "instances:\n  a: { plugin: fake }\n  b: { plugin: fake }\nroutes:\n  - { from: a.out, to: b.any, template: \"{{${S}}}\" }\n",
        "instances:\n  a: { plugin: fake }\n  b: { plugin: fake }\nroutes:\n  - { from: a.out, to: b.any, map: { x: 1 }, type: \"${S}\" }\n",
        "instances:\n  a: { plugin: fake, n: \"${S}\" }\n",
    ])
    func secretsNeverAppearInValidationDiagnostics(yaml: String) throws {
        let (_, diagnostics) = try validate(yaml, environment: ["S": Self.secret])
        #expect(!diagnostics.isEmpty, "the input is meant to be wrong")
        for item in diagnostics {
            #expect(!item.description.contains(Self.secret), "secret leaked: \(item)")
        }
    }
}
