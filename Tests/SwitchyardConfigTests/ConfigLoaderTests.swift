import Foundation
import SwitchyardConfig
import SwitchyardCore
import Testing

private typealias Location = SwitchyardCore.SourceLocation

private func load(_ text: String, file: String = "r.yaml", environment: [String: String] = [:]) -> (GraphConfig, [Diagnostic]) {
    ConfigLoader(environment: environment).load(sources: [(file: file, text: text)])
}

private func at(_ file: String, _ line: Int, _ column: Int) -> Location { Location(file: file, line: line, column: column) }

/// The one diagnostic whose message contains `fragment`.
private func diagnostic(_ diagnostics: [Diagnostic], containing fragment: String) throws -> Diagnostic {
    let matches = diagnostics.filter { $0.message.contains(fragment) }
    try #require(matches.count == 1, "expected one diagnostic containing '\(fragment)', got \(diagnostics)")
    return matches[0]
}

@Suite struct ConfigLoaderStructureTests {
    @Test func loadsAWellFormedFile() throws {
        let text = """
            plugins: { dir: Plugins }
            instances:
              clock: { plugin: core, timer: { interval: 1s } }
              out: { plugin: core }
            routes:
              - name: heartbeat
                from: clock.tick
                when: body.count > 1
                template: "tick {{body.count}}"
                content_type: text/plain
                to: out.print
              - from: clock.tick
                to: [out.print, out.file]
                map: { n: "{{body.count}}" }
                type: t.N
            types:
              - name: t.N
                schema: { type: object, properties: { n: { type: integer } } }
            """
        let (config, diagnostics) = load(text)
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(config.files == ["r.yaml"])
        #expect(config.pluginsDirectory?.value == RouteFilePath.resolve("Plugins", besideFile: "r.yaml"))
        #expect(config.instances.map(\.name) == ["clock", "out"])
        let clock = try #require(config.instance(named: "clock"))
        #expect(clock.plugin.value == "core")
        #expect(clock.plugin.location == at("r.yaml", 3, 20))
        #expect(clock.location == at("r.yaml", 3, 3))
        #expect(clock.config.json == ["timer": ["interval": "1s"]])
        #expect(config.routes.count == 2)
        let first = config.routes[0]
        #expect(first.name == "heartbeat")
        #expect(first.from.value == PortReference(instance: "clock", port: "tick"))
        #expect(first.from.location == at("r.yaml", 7, 11))
        #expect(first.to.map(\.value.description) == ["out.print"])
        #expect(first.when?.value == "body.count > 1")
        #expect(first.when?.location == at("r.yaml", 8, 11))
        #expect(first.template?.value == "tick {{body.count}}")
        // A quoted scalar's location is its first character, after the quote.
        #expect(first.template?.location == at("r.yaml", 9, 16))
        #expect(first.contentType?.value == "text/plain")
        #expect(first.map == nil)
        #expect(first.queueSize == ConfigLoader.defaultQueueSize)
        #expect(first.onFull == .block)
        #expect(first.allowLoops == false)
        let second = config.routes[1]
        #expect(second.name == "r.yaml#2")
        #expect(second.to.map(\.value.description) == ["out.print", "out.file"])
        #expect(second.to.map(\.location) == [at("r.yaml", 13, 10), at("r.yaml", 13, 21)])
        #expect(second.map?.json == ["n": "{{body.count}}"])
        #expect(second.outputType?.value == "t.N")
        #expect(config.types.map(\.name) == ["t.N"])
        #expect(config.types.first?.schema == ["type": "object", "properties": ["n": ["type": "integer"]]])
    }

    @Test func emptyFileIsEmptyConfig() {
        let (config, diagnostics) = load("# nothing here\n")
        #expect(diagnostics.isEmpty)
        #expect(config.instances.isEmpty && config.routes.isEmpty)
    }

    @Test func yamlSyntaxErrorNamesFileLineColumn() throws {
        let text = """
            instances:
              x:
                plugin: a: b
            """
        let (_, diagnostics) = load(text, file: "bad.yaml")
        let error = try #require(diagnostics.first)
        #expect(diagnostics.count == 1)
        #expect(error.message.hasPrefix("invalid YAML"))
        #expect(error.location == at("bad.yaml", 3, 14))
        #expect(error.description.hasPrefix("bad.yaml:3:14: error: invalid YAML"))
    }

    /// libyaml's terse complaints get what they usually mean (issue 34): a tab, an unquoted ': '.
    @Test func aTabAndAnUnquotedColonAreExplained() throws {
        let (_, tabbed) = load("instances:\n\tx: { plugin: core }\n", file: "tab.yaml")
        #expect(tabbed.first?.message == "invalid YAML: a tab character; YAML indents with spaces only", "\(tabbed)")
        #expect(tabbed.first?.location == at("tab.yaml", 2, 1))
        let (_, colon) = load("instances:\n  x:\n    plugin: a: b\n", file: "colon.yaml")
        #expect(colon.first?.message.hasSuffix("(a ': ' inside an unquoted value: quote the value)") == true, "\(colon)")
    }

    @Test func unclosedFlowSequenceIsReportedInItsFile() throws {
        let (_, diagnostics) = load("instances:\n  a: [1, 2\n", file: "flow.yaml")
        let error = try #require(diagnostics.first)
        #expect(error.message.hasPrefix("invalid YAML"))
        #expect(error.location?.file == "flow.yaml")
        #expect((error.location?.line ?? 0) >= 2)
    }

    @Test func duplicateKeyIsReported() throws {
        let (_, diagnostics) = load("instances:\n  a: { plugin: p }\n  a: { plugin: q }\n", file: "dup.yaml")
        let error = try diagnostic(diagnostics, containing: "duplicate key 'a'")
        #expect(error.location?.file == "dup.yaml")
    }

    @Test func topLevelMustBeAMapping() throws {
        let (_, diagnostics) = load("- a\n- b\n")
        let error = try diagnostic(diagnostics, containing: "a route file must be a mapping")
        #expect(error.location == at("r.yaml", 1, 1))
    }

    @Test func unknownTopLevelKey() throws {
        let (_, diagnostics) = load("instances: {}\nrutes: []\n")
        let error = try diagnostic(diagnostics, containing: "unknown key 'rutes'")
        #expect(
            error.message
                == "unknown key 'rutes' (expected one of: plugins, spool, store, admin, tracing, types, instances, routes, iiideas, iiidea_templates, iiidea_history, oauth)"
        )
        #expect(error.location == at("r.yaml", 2, 1))
    }

    /// `admin.max_connections`, `max_connections_per_peer`, `header_timeout`: read and bounded.
    @Test func theAdminGuardLimitsAreReadAndBounded() throws {
        let (config, diagnostics) = load("admin: { max_connections: 256, max_connections_per_peer: 8, header_timeout: 2s }\n")
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(config.adminConnections.maximumConnections == 256)
        #expect(config.adminConnections.maximumPerPeer == 8)
        #expect(config.adminConnections.headerTimeout == .seconds(2))
        let (_, wrong) = load("admin:\n  max_connections: 0\n  header_timeout: forever\n")
        #expect(
            wrong.map(\.message) == [
                "admin.max_connections must be a whole number from 1 to 65536",
                "admin.header_timeout must be a duration from 1ms to 1h, such as 10s",
            ])
        #expect(wrong.first?.location == at("r.yaml", 2, 20))
    }

    /// `store.url`: a PostgreSQL URL; a password only from the environment; errors never repeat it.
    @Test func theStoreURLIsCheckedAndItsPasswordMustComeFromTheEnvironment() throws {
        let url = "postgres://switchyard:s3cret@db.example:5432/switchyard?sslmode=require"
        let (config, diagnostics) = load("store: { url: \"${STORE}\" }\n", environment: ["STORE": url])
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(config.storeURL?.value == url)

        let (_, literal) = load("store: { url: \"\(url)\" }\n")
        let refused = try diagnostic(literal, containing: "store.url carries a password")
        #expect(refused.location == at("r.yaml", 1, 16))
        #expect(!refused.message.contains("s3cret"))

        let (_, halfSecret) = load("store: { url: \"postgres://u:s3cret@${HOST}/d\" }\n", environment: ["HOST": "db.example"])
        _ = try diagnostic(halfSecret, containing: "store.url carries a password")

        let (withoutPassword, none) = load("store: { url: \"postgres://switchyard@db.example/switchyard\" }\n")
        #expect(none.isEmpty && withoutPassword.storeURL != nil, "\(none)")

        for (bad, reason) in [
            ("mysql://u:p@h/d", "not a postgres:// URL"), ("postgres://u@h/", "names no database"),
            ("postgres://u@h/d?sslmode=maybe", "sslmode must be"), ("postgres://h/d", "names no user"),
        ] {
            let (_, problems) = load("store: { url: \"${STORE}\" }\n", environment: ["STORE": bad])
            let problem = try diagnostic(problems, containing: reason)
            #expect(!problem.message.contains(":p@"), "\(problem.message)")
        }
        let (_, unknown) = load("store: { path: x }\n")
        _ = try diagnostic(unknown, containing: "unknown key 'path' in store (expected: url)")
    }

    @Test func duplicateInstanceAcrossFilesNamesTheFirst() throws {
        let first = "instances:\n  timer: { plugin: core }\n"
        let second = "# second file\ninstances:\n  other: { plugin: core }\n  timer: { plugin: core }\n"
        let (config, diagnostics) = ConfigLoader(environment: [:]).load(sources: [
            (file: "a.yaml", text: first), (file: "b.yaml", text: second),
        ])
        let error = try diagnostic(diagnostics, containing: "instance 'timer'")
        #expect(error.message == "instance 'timer' is already defined at a.yaml:2:3")
        #expect(error.location == at("b.yaml", 4, 3))
        #expect(config.instances.map(\.name) == ["timer", "other"])
        #expect(config.files == ["a.yaml", "b.yaml"])
    }

    @Test func instanceProblems() throws {
        let text = """
            instances:
              "bad name": { plugin: core }
              noplugin: { timer: 1 }
              scalar: 5
            """
        let (config, diagnostics) = load(text)
        #expect(config.instances.isEmpty)
        #expect(try diagnostic(diagnostics, containing: "instance name 'bad name'").location == at("r.yaml", 2, 3))
        #expect(try diagnostic(diagnostics, containing: "instance 'noplugin' needs 'plugin: NAME'").location == at("r.yaml", 3, 13))
        #expect(try diagnostic(diagnostics, containing: "instance 'scalar' must be a mapping").location == at("r.yaml", 4, 11))
    }

    @Test func routeMissingFromAndTo() throws {
        let text = """
            routes:
              - to: b.in
              - name: lonely
                from: a.out
            """
        let (config, diagnostics) = load(text)
        #expect(config.routes.isEmpty)
        let missingFrom = try diagnostic(diagnostics, containing: "needs 'from")
        #expect(missingFrom.message == "route 'r.yaml#1' needs 'from: instance.port'")
        #expect(missingFrom.location == at("r.yaml", 2, 5))
        let missingTo = try diagnostic(diagnostics, containing: "needs 'to")
        #expect(missingTo.message.hasPrefix("route 'lonely' needs 'to: instance.port'"))
        #expect(missingTo.location == at("r.yaml", 3, 5))
    }

    @Test func emptyToListIsRefused() throws {
        let (_, diagnostics) = load("routes:\n  - from: a.out\n    to: []\n")
        #expect(try diagnostic(diagnostics, containing: "'to' lists no port").location == at("r.yaml", 3, 9))
    }

    @Test(arguments: [
        ("nodot", "found a string 'nodot'"),
        ("a.b.c", "found a string 'a.b.c'"),
        (".port", "found a string '.port'"),
        ("inst.", "found a string 'inst.'"),
        ("42", "found a number"),
        ("{ x: 1 }", "found a mapping"),
    ])
    func badPortReference(written: String, found: String) throws {
        let (config, diagnostics) = load("routes:\n  - from: \(written)\n    to: b.in\n")
        let error = try diagnostic(diagnostics, containing: "expected a port as 'instance.port'")
        #expect(error.message.contains(found), "\(error.message)")
        #expect(error.location == at("r.yaml", 2, 11))
        #expect(config.routes.isEmpty)
    }

    @Test func badPortInToList() throws {
        let (_, diagnostics) = load("routes:\n  - from: a.out\n    to: [b.in, nodot]\n")
        let error = try diagnostic(diagnostics, containing: "'nodot'")
        #expect(error.location == at("r.yaml", 3, 16))
    }

    @Test func unknownRouteKey() throws {
        let (_, diagnostics) = load("routes:\n  - from: a.out\n    to: b.in\n    wen: x\n")
        let error = try diagnostic(diagnostics, containing: "unknown key 'wen' in route")
        #expect(error.location == at("r.yaml", 4, 5))
    }

    @Test func duplicateRouteName() throws {
        let text = """
            routes:
              - { name: r, from: a.out, to: b.in }
              - { name: r, from: a.out, to: b.in }
            """
        let (config, diagnostics) = load(text)
        let error = try diagnostic(diagnostics, containing: "route name 'r' is already used at r.yaml:2:5")
        #expect(error.location == at("r.yaml", 3, 13))
        #expect(config.routes.count == 1)
    }

    @Test func queueSettings() throws {
        let (config, diagnostics) = load("routes:\n  - { from: a.out, to: b.in, queue: { size: 5, on_full: drop_oldest } }\n")
        #expect(diagnostics.isEmpty)
        #expect(config.routes.first?.queueSize == 5)
        #expect(config.routes.first?.onFull == .dropOldest)
    }

    @Test(arguments: [
        ("{ size: 0 }", "queue.size must be an integer from 1 to 1048576"),
        ("{ size: -3 }", "queue.size must be an integer from 1 to 1048576"),
        ("{ size: \"10\" }", "queue.size must be an integer from 1 to 1048576"),
        ("{ size: 1.5 }", "queue.size must be an integer from 1 to 1048576"),
        ("{ size: 999999999999 }", "queue.size must be an integer from 1 to 1048576"),
        ("{ on_full: maybe }", "queue.on_full must be one of: block, drop_oldest"),
        ("{ on_full: 1 }", "queue.on_full must be one of"),
        ("{ depth: 3 }", "unknown key 'depth' in queue (expected: size, on_full, spool_limit)"),
        ("100", "'queue' must be a mapping"),
    ])
    func queueValidation(queue: String, message: String) throws {
        let (config, diagnostics) = load("routes:\n  - from: a.out\n    to: b.in\n    queue: \(queue)\n")
        let error = try diagnostic(diagnostics, containing: message)
        #expect(error.location?.line == 4)
        #expect(config.routes.isEmpty)
    }

    @Test func queueErrorPointsAtTheValue() throws {
        let (_, diagnostics) = load("routes:\n  - from: a.out\n    to: b.in\n    queue: { size: 0 }\n")
        #expect(try diagnostic(diagnostics, containing: "queue.size").location == at("r.yaml", 4, 20))
    }

    @Test(arguments: [("allow", true), ("prevent", false)])
    func loopValues(value: String, allows: Bool) throws {
        let (config, diagnostics) = load("routes:\n  - { from: a.out, to: b.in, loop: \(value) }\n")
        #expect(diagnostics.isEmpty)
        #expect(try #require(config.routes.first).allowLoops == allows)
    }

    @Test(arguments: ["sometimes", "true", "1", "Allow"])
    func badLoopValue(value: String) throws {
        let (config, diagnostics) = load("routes:\n  - from: a.out\n    to: b.in\n    loop: \(value)\n")
        let error = try diagnostic(diagnostics, containing: "'loop' must be 'prevent' (the default) or 'allow'")
        #expect(error.location == at("r.yaml", 4, 11))
        #expect(config.routes.isEmpty)
    }

    @Test func mapAndTemplateAreExclusive() throws {
        let text = """
            routes:
              - from: a.out
                to: b.in
                map: { x: "{{body.x}}" }
                template: "{{body.x}}"
            """
        let (config, diagnostics) = load(text)
        let error = try diagnostic(diagnostics, containing: "either 'map' or 'template', not both")
        #expect(error.location == at("r.yaml", 5, 16))
        #expect(config.routes.isEmpty)
    }

    @Test func mapMustBeAMapping() throws {
        let (_, diagnostics) = load("routes:\n  - { from: a.out, to: b.in, map: [1] }\n")
        #expect(try diagnostic(diagnostics, containing: "'map' must be a mapping").location?.line == 2)
    }

    @Test func textFieldsMustBeScalars() throws {
        let (_, diagnostics) = load("routes:\n  - { from: a.out, to: b.in, when: [1] }\n")
        #expect(try diagnostic(diagnostics, containing: "'when' must be a string, found a list").location?.line == 2)
    }

    @Test func pluginsDirConflictAcrossFiles() throws {
        let (config, diagnostics) = ConfigLoader(environment: [:]).load(sources: [
            (file: "a.yaml", text: "plugins: { dir: /One }\n"), (file: "b.yaml", text: "plugins: { dir: /Two }\n"),
        ])
        let error = try diagnostic(diagnostics, containing: "plugins.dir is set to '/One' at a.yaml:1:17")
        #expect(error.location == at("b.yaml", 1, 17))
        #expect(config.pluginsDirectory?.value == "/One")
    }

    /// A relative path is taken from its file's folder: the same words in two folders are two
    /// places, and different words naming one place agree.
    @Test func relativePathSettingsAreTakenFromTheirFilesFolder() throws {
        let (config, diagnostics) = ConfigLoader(environment: [:]).load(sources: [
            (file: "/srv/routes/a.yaml", text: "plugins: { dir: ../Plugins }\nspool: { path: state/spool.db }\n"),
            (file: "/srv/routes/b.yaml", text: "plugins: { dir: ../Plugins }\n"),
        ])
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(config.pluginsDirectory?.value == "/srv/routes/../Plugins")
        #expect(config.spoolPath?.value == "/srv/routes/state/spool.db")
        let (_, conflict) = ConfigLoader(environment: [:]).load(sources: [
            (file: "/srv/one/a.yaml", text: "plugins: { dir: Plugins }\n"), (file: "/srv/two/b.yaml", text: "plugins: { dir: Plugins }\n"),
        ])
        _ = try diagnostic(conflict, containing: "plugins.dir is set to '/srv/one/Plugins'")
    }

    @Test func typeDeclarationProblems() throws {
        let text = """
            types:
              - name: t.Bad
                schema:
                  type: object
                  properties:
                    x: { type: wrong }
              - schema: {}
              - name: t.Extra
                color: red
            """
        let (config, diagnostics) = load(text)
        let bad = try diagnostic(diagnostics, containing: "type 't.Bad': schema /properties/x/type")
        #expect(bad.location?.line == 6)
        #expect(try diagnostic(diagnostics, containing: "a type needs a 'name'").location == at("r.yaml", 7, 5))
        #expect(try diagnostic(diagnostics, containing: "unknown key 'color' in type 't.Extra'").location == at("r.yaml", 9, 5))
        #expect(config.types.map(\.name) == ["t.Extra"])
    }
}

@Suite struct ConfigScalarTests {
    @Test func plainScalarsAreTypedQuotedOnesAreStrings() throws {
        let text = """
            instances:
              x:
                plugin: p
                int: 1
                quoted: "1"
                single: '1'
                hex: 0x10
                octal: 0o17
                negative: -4
                float: 1.5
                yes: true
                no: False
                quotedBool: "true"
                nothing: ~
                empty:
                word: yes
                version: 1.2.3
            """
        let (config, diagnostics) = load(text)
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let json = try #require(config.instance(named: "x")).config.json
        #expect(json["int"] == .int(1))
        #expect(json["quoted"] == .string("1"))
        #expect(json["single"] == .string("1"))
        #expect(json["hex"] == .int(16))
        #expect(json["octal"] == .int(15))
        #expect(json["negative"] == .int(-4))
        #expect(json["float"] == .double(1.5))
        #expect(json["yes"] == .bool(true))
        #expect(json["no"] == .bool(false))
        #expect(json["quotedBool"] == .string("true"))
        #expect(json["nothing"] == .null)
        #expect(json["empty"] == .null)
        #expect(json["word"] == .string("yes"))
        #expect(json["version"] == .string("1.2.3"))
    }

    @Test func locationOfNestedPaths() throws {
        let text = """
            instances:
              t:
                plugin: core
                timer:
                  interval: 5s
                hosts:
                  - a
                  - b
            """
        let (config, diagnostics) = load(text)
        #expect(diagnostics.isEmpty)
        let node = try #require(config.instance(named: "t")).config
        #expect(node.location(ofPath: "timer.interval") == at("r.yaml", 5, 7))
        #expect(node.location(ofPath: "timer") == at("r.yaml", 4, 5))
        #expect(node.location(ofPath: "hosts[1]") == at("r.yaml", 8, 9))
        #expect(node.location(ofPath: "hosts[0]") == at("r.yaml", 7, 9))
        // Paths that lead nowhere stop at the deepest node that exists.
        #expect(node.location(ofPath: "timer.missing") == at("r.yaml", 4, 5))
        #expect(node.location(ofPath: "hosts[7]") == at("r.yaml", 6, 5))
        #expect(node.location(ofPath: "") == node.location)
    }

    @Test func nodeAccessors() throws {
        let (config, _) = load("instances:\n  x: { plugin: p, list: [1, two], map: { k: v }, n: 3 }\n")
        let node = try #require(config.instance(named: "x")).config
        #expect(node["list"]?.elements?.count == 2)
        #expect(node["list"]?.kindName == "a list")
        #expect(node["map"]?.members?.map(\.key) == ["k"])
        #expect(node["map"]?.kindName == "a mapping")
        #expect(node["n"]?.string == nil)
        #expect(node["n"]?.scalarText == "3")
        #expect(node["map"]?["k"]?.string == "v")
        #expect(node["plugin"] == nil)
        #expect(node["missing"] == nil)
    }
}

@Suite struct ConfigSubstitutionTests {
    @Test func substitutesVariablesAndMarksThemSecret() throws {
        let text = """
            instances:
              x:
                plugin: p
                host: ${HOST}
                url: "mqtt://${HOST}:${PORT:-1883}/x"
                port: ${PORT:-1883}
                literal: "$${HOST} costs $5"
                plain: text
                nested: { deep: [a, "${USER}"] }
            """
        let (config, diagnostics) = load(text, environment: ["HOST": "broker.local", "USER": "alice"])
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let node = try #require(config.instance(named: "x")).config
        #expect(node["host"]?.string == "broker.local")
        #expect(node["host"]?.isSecret == true)
        #expect(node["url"]?.string == "mqtt://broker.local:1883/x")
        #expect(node["url"]?.isSecret == true)
        // A default is written in the file: not a secret, and typed like any plain scalar.
        #expect(node["port"]?.json == .int(1883))
        #expect(node["port"]?.isSecret == false)
        #expect(node["literal"]?.string == "${HOST} costs $5")
        #expect(node["literal"]?.isSecret == false)
        #expect(node["plain"]?.isSecret == false)
        #expect(node["nested"]?.isSecret == true)
        #expect(node["nested"]?["deep"]?.elements?.last?.string == "alice")
        #expect(node.isSecret == true)
    }

    @Test func environmentValueWinsOverDefault() throws {
        let (config, diagnostics) = load("instances:\n  x: { plugin: p, port: \"${PORT:-1883}\" }\n", environment: ["PORT": "8883"])
        #expect(diagnostics.isEmpty)
        #expect(config.instance(named: "x")?.config["port"]?.string == "8883")
    }

    @Test func emptyDefaultIsAllowed() throws {
        let (config, diagnostics) = load("instances:\n  x: { plugin: p, v: \"a${NOPE:-}b\" }\n")
        #expect(diagnostics.isEmpty)
        #expect(config.instance(named: "x")?.config["v"]?.string == "ab")
    }

    @Test func unsetVariableIsReportedAtTheColumnOfTheReference() throws {
        let text = """
            instances:
              x:
                plugin: p
                password: "x${SECRET}y"
                token: ${TOKEN}
            """
        let (_, diagnostics) = load(text)
        let secret = try diagnostic(diagnostics, containing: "'SECRET'")
        #expect(secret.message == "environment variable 'SECRET' is not set (used as ${SECRET})")
        #expect(secret.location == at("r.yaml", 4, 17))
        let token = try diagnostic(diagnostics, containing: "'TOKEN'")
        #expect(token.location == at("r.yaml", 5, 12))
    }

    @Test func invalidVariableReference() throws {
        let (_, diagnostics) = load("instances:\n  x: { plugin: p, v: \"${NOT-A-NAME}\" }\n")
        let error = try diagnostic(diagnostics, containing: "invalid variable reference '${NOT-A-NAME}'")
        #expect(error.location == at("r.yaml", 2, 23))
    }

    static let secret = "s3cr3t-Value-42"

    @Test(arguments: [
        "routes:\n  - from: ${SECRET}\n    to: b.in\n",
        "routes:\n  - from: a.out\n    to: [b.in, \"${SECRET}\"]\n",
        "routes:\n  - { from: a.out, to: b.in, loop: \"${SECRET}\" }\n",
        "routes:\n  - { from: a.out, to: b.in, queue: { size: \"${SECRET}\", on_full: \"${SECRET}\" } }\n",
        "routes:\n  - { name: \"${SECRET}\", from: a.out, to: b.in }\n  - { name: \"${SECRET}\", from: a.out, to: b.in }\n",
        "routes:\n  - { name: \"${SECRET}\", to: b.in }\n",
        "plugins: { dir: Plugins }\n",
        "types:\n  - name: \"${SECRET}\"\n    schema: { type: nope }\n",
    ])
    func secretsNeverAppearInDiagnostics(text: String) throws {
        let sources: [(file: String, text: String)] = [
            (file: "a.yaml", text: "plugins: { dir: \"${SECRET}\" }\n"),
            (file: "b.yaml", text: text),
        ]
        let (_, diagnostics) = ConfigLoader(environment: ["SECRET": Self.secret]).load(sources: sources)
        #expect(!diagnostics.isEmpty, "the input is meant to be wrong")
        for item in diagnostics {
            #expect(!item.message.contains(Self.secret), "secret leaked: \(item)")
            #expect(!item.description.contains(Self.secret), "secret leaked: \(item)")
        }
    }
}

@Suite struct GraphRendererTests {
    let config: GraphConfig

    init() throws {
        let text = """
            instances:
              a: { plugin: core }
              b: { plugin: core }
              c: { plugin: other }
            routes:
              - { name: first, from: a.out, to: b.in, when: 'subject == "x"' }
              - { name: fan, from: a.out, to: [b.in, c.sink] }
              - { name: back, from: c.src, to: a.in }
            """
        let (config, diagnostics) = ConfigLoader(environment: [:]).load(sources: [(file: "g.yaml", text: text)])
        try #require(diagnostics.isEmpty)
        self.config = config
    }

    @Test func mermaidHasEveryEdge() {
        let text = GraphRenderer.mermaid(config)
        #expect(text.hasPrefix("flowchart LR"))
        #expect(text.contains(#"a_out -->|"first when subject == #quot;x#quot;"| b_in"#))
        #expect(text.contains(#"a_out -->|"fan"| b_in"#))
        #expect(text.contains(#"a_out -->|"fan"| c_sink"#))
        #expect(text.contains(#"c_src -->|"back"| a_in"#))
        #expect(text.components(separatedBy: "-->").count - 1 == 4)
        #expect(text.contains(#"subgraph c["c (other)"]"#))
    }

    @Test func dotHasEveryEdge() {
        let text = GraphRenderer.dot(config)
        #expect(text.hasPrefix("digraph switchyard {"))
        #expect(text.hasSuffix("}"))
        #expect(text.contains(#""a.out" -> "b.in" [label="first\nwhen subject == "#))
        #expect(text.contains(#""a.out" -> "b.in" [label="fan"];"#))
        #expect(text.contains(#""a.out" -> "c.sink" [label="fan"];"#))
        #expect(text.contains(#""c.src" -> "a.in" [label="back"];"#))
        #expect(text.components(separatedBy: " -> ").count - 1 == 4)
        #expect(text.contains(#"label="c (other)";"#))
    }

    /// Graphviz escapes a double quote inside a quoted string as \" (`#quot;` is Mermaid's
    /// escape and shows up literally in a Graphviz drawing).
    @Test func dotEscapesQuotesTheGraphvizWay() {
        let text = GraphRenderer.dot(config)
        #expect(text.contains(#"[label="first\nwhen subject == \"x\""];"#))
    }
}

@Suite struct DeliverySettingsTests {
    @Test func atLeastOnceWithRetryDedupeAndSpool() throws {
        let text = """
            spool: { path: var/spool.db }
            routes:
              - from: a.out
                to: b.in
                delivery: at-least-once
                retry: { attempts: 3, backoff: 50ms, max_backoff: 2s }
                dedupe: 10m
                queue: { on_full: spool, spool_limit: 64MiB }
            """
        let (config, diagnostics) = load(text)
        #expect(diagnostics.isEmpty)
        let route = try #require(config.routes.first)
        #expect(route.delivery == .atLeastOnce)
        #expect(route.retry == RetryPolicy(attempts: 3, backoff: 50_000_000, maxBackoff: 2_000_000_000))
        #expect(route.dedupeWindow == 600_000_000_000)
        #expect(route.onFull == .spool)
        #expect(route.spoolLimit == 64 * 1024 * 1024)
        #expect(config.spoolPath?.value == RouteFilePath.resolve("var/spool.db", besideFile: "r.yaml"))
    }

    @Test func dedupeWithAKeyTemplate() throws {
        let (config, diagnostics) = load(
            "routes:\n  - { from: a.out, to: b.in, delivery: at-least-once, dedupe: { key: \"{{headers.mqtt.user.msgid}}\", window: 1h } }\n"
        )
        #expect(diagnostics.isEmpty)
        let route = try #require(config.routes.first)
        #expect(route.dedupeKey?.value == "{{headers.mqtt.user.msgid}}")
        #expect(route.dedupeWindow == 3_600_000_000_000)
        let (defaulted, _) = load("routes:\n  - { from: a.out, to: b.in, delivery: at-least-once, dedupe: { key: \"{{body.id}}\" } }\n")
        #expect(defaulted.routes.first?.dedupeWindow == ConfigLoader.defaultDedupeWindow)
    }

    @Test func defaultsAreAtMostOnce() throws {
        let (config, diagnostics) = load("routes:\n  - { from: a.out, to: b.in }\n")
        #expect(diagnostics.isEmpty)
        #expect(config.routes.first?.delivery == .atMostOnce)
        #expect(config.routes.first?.retry == .standard)
        #expect(config.routes.first?.dedupeWindow == nil)
    }

    @Test(arguments: [
        ("delivery: sometimes", "'delivery' must be one of: at-most-once, at-least-once"),
        ("queue: { on_full: spool }", "needs 'delivery: at-least-once'"),
        ("retry: { attempts: 2 }", "'retry' applies to 'delivery: at-least-once' routes only"),
        ("dedupe: 1m", "'dedupe' applies to 'delivery: at-least-once' routes only"),
        ("delivery: at-least-once, retry: { attempts: 0 }", "retry.attempts must be a positive integer"),
        ("delivery: at-least-once, retry: { backoff: soon }", "retry.backoff must be a duration"),
        ("delivery: at-least-once, retry: { tries: 2 }", "unknown key 'tries' in retry"),
        ("delivery: at-least-once, retry: 3", "'retry' must be a mapping"),
        ("delivery: at-least-once, dedupe: forever", "'dedupe' must be a duration"),
        ("delivery: at-least-once, dedupe: { key: \"\" }", "dedupe.key must be a template"),
        ("delivery: at-least-once, dedupe: { key: \"{{id}}\", window: never }", "dedupe.window must be a duration"),
        ("delivery: at-least-once, dedupe: { keys: \"{{id}}\" }", "unknown key 'keys' in dedupe (expected: key, window)"),
        ("delivery: at-least-once, queue: { spool_limit: lots }", "queue.spool_limit must be a size"),
    ])
    func invalidSettings(written: String, message: String) throws {
        let (config, diagnostics) = load("routes:\n  - { from: a.out, to: b.in, \(written) }\n")
        let error = try diagnostic(diagnostics, containing: message)
        #expect(error.location?.line == 2)
        #expect(config.routes.isEmpty)
    }

    @Test func byteSizes() {
        #expect(ByteSizeText.bytes("4096") == 4096)
        #expect(ByteSizeText.bytes("64KB") == 64_000)
        #expect(ByteSizeText.bytes("64KiB") == 65_536)
        #expect(ByteSizeText.bytes("1.5 GiB") == 1_610_612_736)
        #expect(ByteSizeText.bytes("-1MB") == nil)
        #expect(ByteSizeText.bytes("MB") == nil)
        #expect(ByteSizeText.bytes("12 parsecs") == nil)
    }

    @Test func retryPausesDoubleWithinTheCeiling() {
        let policy = RetryPolicy(attempts: 10, backoff: 100, maxBackoff: 1000)
        #expect(policy.pause(afterFailures: 1, random: 1) == 100)
        #expect(policy.pause(afterFailures: 2, random: 1) == 200)
        #expect(policy.pause(afterFailures: 3, random: 0) == 200)
        #expect(policy.pause(afterFailures: 9, random: 1) == 1000)
        #expect(policy.pause(afterFailures: 500, random: 1) == 1000)
    }
}

@Suite struct ConfigLoaderExclusiveTests {
    @Test func exclusiveIsTheRoutersKeyNotThePlugins() throws {
        let (config, diagnostics) = load(
            """
            instances:
              phone: { plugin: sip, exclusive: true, user: alice }
              other: { plugin: sip, exclusive: "yes" }
              plain: { plugin: core }
            """)
        let phone = try #require(config.instance(named: "phone"))
        #expect(phone.exclusive?.value == true)
        #expect(phone.config.json == ["user": "alice"], "the plugin never sees it")
        #expect(config.instance(named: "plain")?.exclusive == nil)
        let refused = try diagnostic(diagnostics, containing: "exclusive must be true or false")
        #expect(refused.location == at("r.yaml", 3, 37))
        #expect(config.instance(named: "other") == nil)
    }
}
