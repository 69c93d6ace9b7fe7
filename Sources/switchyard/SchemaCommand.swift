import ArgumentParser
import Foundation
import SwitchyardConfig
import SwitchyardCore
import SwitchyardRuntime

/// `switchyard schema`: the JSON Schema of route files, with the instance configuration of
/// every plugin found — for yaml-language-server and the editors that use it.
struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema (draft 2020-12) of route files, with each installed plugin's configuration.",
        discussion: """
            Point an editor at it: save it (switchyard schema > switchyard.schema.json) and start a route \
            file with '# yaml-language-server: $schema=switchyard.schema.json'. Unknown keys are errors, as \
            in validate; values written as ${VAR} are checked as written.
            """)

    @Option(name: .long, help: "The plugin directory (default: SWITCHYARD_PLUGINS, else the installed one, else Plugins).")
    var plugins: String?

    func run() throws {
        let directory = PluginCommandLine.directory(option: plugins, environment: ProcessEnvironment.current)
        let (loaded, refused) = PluginLoader.loadDirectory(directory)
        for error in refused { printError("error: \(error)") }
        if loaded.isEmpty { printError("note: no plugins in \(directory): instances take any configuration") }
        let schema = RouteFileSchema.document(
            plugins: loaded.sorted { $0.manifest.name < $1.manifest.name }.map { ($0.manifest.name, $0.manifest.config) })
        let data = try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(with: Data(schema.serializedBytes())), options: [.prettyPrinted, .sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }
}
