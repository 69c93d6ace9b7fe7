import Foundation
import Testing

@testable import IntegrationSupport

/// The loader refuses plugin files and directories other users could have written, and
/// shared objects that are not plugins; a refused plugin is then unknown to the graph.
@Suite(.timeLimit(.minutes(2)))
struct PluginTrustTests {
    static func timerToFile(_ sandbox: Sandbox) -> String {
        """
        instances:
          clock: { plugin: core, timer: { interval: 50ms } }
          out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
        routes:
          - { name: ticks, from: clock.tick, to: out.write }
        """
    }

    @Test func worldWritablePluginDirectoryIsRefused() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(Self.timerToFile(sandbox))
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: sandbox.plugins.path)
        let result = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status != 0)
        let refusal = result.errors.split(separator: "\n").first { $0.contains("writable by every user") }
        #expect(refusal?.contains(sandbox.plugins.path) == true, "\(result.errors)")
        #expect(refusal?.contains("directory") == true)
        #expect(!result.errors.contains("router started"))
        #expect(sandbox.lines(of: "out.jsonl").isEmpty)
    }

    @Test func worldWritablePluginFileIsRefused() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(Self.timerToFile(sandbox))
        let library = sandbox.plugins.appendingPathComponent("libcore.so").path
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: library)
        let result = try RouterProcess.runToExit(["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status != 0)
        let refusal = result.errors.split(separator: "\n").first { $0.contains("writable by every user") }
        #expect(refusal?.contains(library) == true, "\(result.errors)")
        #expect(refusal?.contains("file") == true)
        #expect(!result.errors.contains("router started"))
    }

    @Test func sharedObjectWithoutTheEntrySymbolIsRefused() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let library = try CCompiler.compilePlugin(
            code: """
                int not_a_plugin(void);
                int not_a_plugin(void) { return 42; }
                """,
            named: "libnotaplugin.so",
            in: sandbox
        )
        let result = try RouterProcess.runToExit(["plugins", "list", "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        let refusal = result.errors.split(separator: "\n").first { $0.contains("does not export the entry symbol") }
        #expect(refusal?.contains(library.path) == true, "\(result.errors)")
        #expect(refusal?.contains("switchyard_plugin_entry") == true)
        // The good plugin beside it still loads.
        #expect(result.output.split(separator: "\n").contains { $0.hasPrefix("core\t") })
        #expect(!result.output.contains("notaplugin"))
    }

    @Test func instanceOfARefusedPluginIsAnUnknownPlugin() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let upper = BuildProducts.packageRoot.appendingPathComponent("examples/c-plugin/upper.c")
        let library = sandbox.plugins.appendingPathComponent("libupper.so")
        try CCompiler.compilePlugin(upper, to: library)
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: library.path)
        let yaml = """
            instances:
              clock: { plugin: core, timer: { interval: 50ms } }
              up:    { plugin: upper }
            routes:
              - { name: ticks, from: clock.tick, to: up.in }
            """
        try sandbox.writeRoutes(yaml)
        let file = sandbox.routes.appendingPathComponent("main.yaml").path
        let result = try RouterProcess.runToExit(["validate", file, "--plugins", sandbox.plugins.path], in: sandbox.root)
        #expect(result.status == 1)
        let lines = result.errors.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains(library.path) && $0.contains("writable by every user") }, "\(result.errors)")
        let at = try #require(position(of: "upper", in: yaml))
        let unknown = lines.first { $0.contains("unknown plugin") }
        #expect(unknown?.hasPrefix("\(file):\(at.line):\(at.column): error: ") == true, "\(result.errors)")
        #expect(unknown?.contains("'upper'") == true)
        #expect(unknown?.contains("instance 'up'") == true)
        #expect(!result.output.contains("ok:"))
    }
}
