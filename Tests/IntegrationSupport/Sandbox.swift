import Foundation
import Testing

/// A private temporary directory with a plugin folder and a routes folder; removed on deinit.
final class Sandbox {
    let root: URL
    let plugins: URL
    let routes: URL

    init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-test-\(UUID().uuidString)")
        root = base
        plugins = base.appendingPathComponent("plugins")
        routes = base.appendingPathComponent("routes")
        for directory in [root, plugins, routes] {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        }
    }

    /// A sandbox with these built first-party plugins installed.
    convenience init(plugins names: [String]) throws {
        try self.init()
        for name in names { try installPlugin(name) }
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    /// Copies a built first-party plugin (e.g. `core`) into the plugin folder.
    func installPlugin(_ name: String) throws {
        let source = BuildProducts.plugin(name)
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw SandboxError("\(source.path) is missing: run `swift build` before the tests")
        }
        let target = plugins.appendingPathComponent("lib\(name).so")
        try FileManager.default.copyItem(at: source, to: target)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: target.path)
    }

    /// Writes a route file.
    func writeRoutes(_ yaml: String, name: String = "main.yaml") throws {
        try yaml.write(to: routes.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    /// A path inside the sandbox.
    func path(_ name: String) -> String { root.appendingPathComponent(name).path }

    /// The lines of a text file in the sandbox (empty when it does not exist yet).
    func lines(of name: String) -> [String] {
        guard let text = try? String(contentsOfFile: path(name), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    /// The JSON objects of a JSON-lines file in the sandbox.
    func jsonLines(of name: String) throws -> [[String: Any]] {
        try lines(of: name).map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw SandboxError("not a JSON object: \(line)")
            }
            return object
        }
    }
}

struct SandboxError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
