import Foundation
import Testing

@testable import IntegrationSupport

/// The command line: version, `validate` diagnostics, `graph` and `plugins list` (plugin commands:
/// PluginCommandLineTests).
@Suite(.timeLimit(.minutes(2)))
struct CLITests {
    /// A graph with one problem of each kind the validator reports with a position.
    static let brokenYAML = """
        instances:
          clock: { plugin: core, timer: { interval: 1s } }
          bad:   { plugin: core, timer: { interval: 1s, bogus: 1 } }
          out:   { plugin: core, file: { path: "${SOME_UNSET_VAR}" } }
          sink:  { plugin: core, file: { path: sink.jsonl } }
        routes:
          - name: ghost
            from: nobody.tick
            to: sink.write
          - name: backwards
            from: clock.tick
            to: clock.tick
          - name: nope
            from: clock.tick
            when: body.count > 1 and body.nope == 2
            to: sink.write
        """

    static let goodYAML = """
        instances:
          clock: { plugin: core, timer: { interval: 1s } }
          a:     { plugin: core, file: { path: a.jsonl } }
          b:     { plugin: core, file: { path: b.jsonl } }
        routes:
          - name: all
            from: clock.tick
            to: [a.write, b.write]
          - name: some
            from: clock.tick
            when: body.count > 2
            to: b.write
        """

    /// A sandbox with core and one route file; returns the file path.
    static func sandbox(with yaml: String) throws -> (Sandbox, String) {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(yaml)
        return (sandbox, sandbox.routes.appendingPathComponent("main.yaml").path)
    }

    /// An installed router (PREFIX/bin/switchyard) finds its plugins in
    /// PREFIX/lib/switchyard/plugins with no option, variable or plugins.dir, from any working
    /// directory; the layout is scripts/release's, made of hard links to the built files.
    @Test func anInstalledRouterFindsThePluginsBesideIt() throws {
        let sandbox = try Sandbox()
        let prefix = sandbox.root.appendingPathComponent("prefix")
        let bin = prefix.appendingPathComponent("bin")
        let plugins = prefix.appendingPathComponent("lib/switchyard/plugins")
        for folder in [bin, plugins] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        for (file, into) in [
            (BuildProducts.switchyard, bin), (BuildProducts.directory.appendingPathComponent("libSwitchyardDependencies.so"), bin),
            (BuildProducts.plugin("core"), plugins),
        ] {
            let target = into.appendingPathComponent(file.lastPathComponent)
            do { try FileManager.default.linkItem(at: file, to: target) } catch { try FileManager.default.copyItem(at: file, to: target) }
        }
        try sandbox.writeRoutes(Self.goodYAML)
        let result = try RouterProcess.runToExit(
            ["validate", sandbox.routes.path], in: URL(fileURLWithPath: "/"), environment: ["SWITCHYARD_PLUGINS": ""],
            executable: bin.appendingPathComponent("switchyard"))
        // Without the plugins, `plugin: core` would be unknown and validation would fail.
        #expect(result.status == 0, "\(result.output)\n\(result.errors)")
    }

    @Test func versionNamesTheRouterAndTheABI() throws {
        let sandbox = try Sandbox()
        let result = try RouterProcess.runToExit(["--version"], in: sandbox.root)
        #expect(result.status == 0)
        #expect(result.output.contains("switchyard"))
        #expect(result.output.contains("plugin ABI 2, 1"))
    }

    @Test func aRouteDirectoryAsTheFirstWordRunsTheDefaultCommand() throws {
        // `routes` could be a plugin's name; it is a directory here, so `run` gets it.
        let (sandbox, _) = try Self.sandbox(with: Self.brokenYAML)
        let result = try RouterProcess.runToExit(["routes", "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        #expect(result.errors.contains("routes/main.yaml:"), "\(result.errors)")
        #expect(!result.errors.contains("neither a switchyard command"))
    }

    @Test func validateReportsEveryProblemWithItsPosition() throws {
        #expect(ProcessInfo.processInfo.environment["SOME_UNSET_VAR"] == nil)
        let yaml = Self.brokenYAML
        let (sandbox, file) = try Self.sandbox(with: yaml)
        let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        #expect(!result.output.contains("ok:"))
        let errors = result.errors.split(separator: "\n").map(String.init)

        func expectError(
            at needle: String, skipping offset: Int = 0, containing text: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            guard let at = position(of: needle, in: yaml) else {
                Issue.record("'\(needle)' is not in the YAML", sourceLocation: sourceLocation)
                return
            }
            let prefix = "\(file):\(at.line):\(at.column + offset): error: "
            #expect(
                errors.contains { $0.hasPrefix(prefix) && $0.contains(text) },
                "no error starting '\(prefix)' and mentioning '\(text)' in:\n\(result.errors)",
                sourceLocation: sourceLocation
            )
        }
        expectError(at: "nobody.tick", containing: "unknown instance 'nobody'")
        expectError(at: "to: clock.tick", skipping: 4, containing: "needs a sink port")
        expectError(at: "body.nope", containing: "no field 'nope'")
        expectError(at: "${SOME_UNSET_VAR}", containing: "SOME_UNSET_VAR")
        expectError(at: "bogus", containing: "bogus")
        // Every line of the report has the compiler form.
        let form = /^.+:\d+:\d+: error: .+$/
        #expect(errors.allSatisfy { $0.wholeMatch(of: form) != nil }, "\(result.errors)")
    }

    @Test func validateReportsErrorsInLineOrder() throws {
        let (sandbox, file) = try Self.sandbox(with: Self.brokenYAML)
        let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        let lines = result.errors.split(separator: "\n").compactMap { line -> Int? in
            guard line.hasPrefix(file + ":") else { return nil }
            return Int(line.dropFirst(file.count + 1).prefix { $0.isNumber })
        }
        #expect(lines.count >= 5)
        #expect(lines == lines.sorted(), "diagnostics should be sorted by line, got lines \(lines)")
    }

    @Test func validateAcceptsAGoodFile() throws {
        let (sandbox, file) = try Self.sandbox(with: Self.goodYAML)
        let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.hasPrefix("ok:"))
        #expect(result.output.contains("3 instances, 2 routes"))
        #expect(!result.errors.contains("error"))
    }

    @Test func graphPrintsAnEdgePerRouteTarget() throws {
        let (sandbox, file) = try Self.sandbox(with: Self.goodYAML)
        let mermaid = try RouterProcess.runToExit(["graph", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(mermaid.status == 0, "\(mermaid.errors)")
        let mermaidLines = mermaid.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(mermaidLines.first == "flowchart LR")
        #expect(mermaidLines.contains("clock_tick -->|\"all\"| a_write"))
        #expect(mermaidLines.contains("clock_tick -->|\"all\"| b_write"))
        #expect(mermaidLines.contains { $0.hasPrefix("clock_tick -->|\"some when body.count > 2\"| b_write") })
        #expect(mermaidLines.filter { $0.contains("-->") }.count == 3)

        let dot = try RouterProcess.runToExit(["graph", file, "--format", "dot", "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(dot.status == 0, "\(dot.errors)")
        let dotLines = dot.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(dotLines.first == "digraph switchyard {")
        #expect(dotLines.contains("\"clock.tick\" -> \"a.write\" [label=\"all\"];"))
        #expect(dotLines.contains("\"clock.tick\" -> \"b.write\" [label=\"all\"];"))
        #expect(dotLines.contains { $0.hasPrefix("\"clock.tick\" -> \"b.write\" [label=\"some") && $0.contains("body.count > 2") })
        #expect(dotLines.filter { $0.contains("->") }.count == 3)
        #expect(dotLines.last == "}")
    }

    /// An iiidea is a node between its trigger and its action, named with its service; ports
    /// carry their plugin's types; a graph validate refuses is not drawn.
    @Test func graphDrawsIiideasAndPortTypesAndRefusesAnInvalidGraph() throws {
        let (sandbox, file) = try Self.sandbox(
            with: """
                instances:
                  clock: { plugin: core, timer: { interval: 1s } }
                  out:   { plugin: core, console: {} }
                iiideas:
                  - id: loud
                    trigger: { port: clock.tick, when: "body.count > 1" }
                    service: { piece: template, preferences: { text: "tick {{body.count}}" } }
                    action:  { port: out.print }
                """)
        let mermaid = try RouterProcess.runToExit(["graph", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(mermaid.status == 0, "\(mermaid.errors)")
        let lines = mermaid.output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.contains(#"iiidea_loud{{"iiidea loud<br/>service: template"}}"#), "\(mermaid.output)")
        #expect(lines.contains(#"clock_tick -->|"when body.count > 1"| iiidea_loud"#))
        #expect(lines.contains("iiidea_loud --> out_print"))
        #expect(lines.contains(#"clock_tick["tick<br/>core.Tick"]"#))
        let (broken, brokenFile) = try Self.sandbox(with: Self.brokenYAML)
        let refused = try RouterProcess.runToExit(["graph", brokenFile, "--plugins", broken.plugins.path], in: broken.root)
        #expect(refused.status == 1)
        #expect(refused.output.isEmpty)
    }

    @Test func pluginsListPrintsTheCorePlugin() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let result = try RouterProcess.runToExit(["plugins", "list", "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 0, "\(result.errors)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 1)
        let fields = lines.first?.split(separator: "\t").map(String.init) ?? []
        #expect(fields.count == 5)
        #expect(fields.first == "core")
        #expect(fields.dropFirst().first == "1.0.0")
        #expect(fields.dropFirst(2).first == "abi 2")
        #expect(fields.dropFirst(3).first == sandbox.plugins.appendingPathComponent("libcore.so").path)
        #expect(fields.last?.contains("tick(source)") == true)
        #expect(fields.last?.contains("write(sink)") == true)
    }

    /// Errors keep their ordinary words: the secret filter masks values after secret-like keys,
    /// not a word after a path such as `/etc/passwd:` or after `token:` in a sentence (issue 34).
    @Test func errorsAreNotMaskedWhereThereIsNoSecret() throws {
        let (sandbox, routes) = try Self.sandbox(with: Self.goodYAML)
        let inspect = try RouterProcess.runToExit(["plugins", "inspect", "/etc/passwd"], in: sandbox.root)
        #expect(inspect.status != 0)
        #expect(inspect.errors.contains("/etc/passwd: invalid ELF header") && !inspect.errors.contains("***"), "\(inspect.errors)")
        let open = try RouterProcess.runToExit(
            ["run", routes, "--plugins", sandbox.plugins.path, "--admin", "0.0.0.0:0"], in: sandbox.root, timeout: .seconds(30))
        #expect(open.status != 0)
        #expect(open.errors.contains("without a token: set admin.token") && !open.errors.contains("***"), "\(open.errors)")
    }
}
