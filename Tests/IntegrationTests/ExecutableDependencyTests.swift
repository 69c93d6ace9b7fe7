import Foundation
import Testing

@testable import IntegrationSupport

/// The `switchyard` executable knows no protocol: no target of its dependency closure lies under
/// `Plugins/` (so it links neither a plugin's code nor what a plugin links, libcrypto among
/// them). Plugin commands reach it through the ABI at run time.
@Suite(.timeLimit(.minutes(2)))
struct ExecutableDependencyTests {
    /// Runs `arguments` (through `env`, so from PATH) in `directory` and returns its standard
    /// output; throws with its standard error when it fails or outlasts `timeout`.
    static func output(of arguments: [String], in directory: URL? = nil, timeout: Duration) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let collected = OutputBuffer()
        let diagnostics = OutputBuffer()
        let readers = [PipeReader(output, into: collected), PipeReader(errors, into: diagnostics)]
        try ChildProcess.start(process)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw SandboxError("\(arguments.joined(separator: " ")) did not finish within \(timeout):\n\(diagnostics.text)")
        }
        process.waitUntilExit()
        _ = collected.waitForEnd(timeout: .seconds(5)) && diagnostics.waitForEnd(timeout: .seconds(5))
        for reader in readers { reader.stop() }
        guard process.terminationStatus == 0 else {
            throw SandboxError("\(arguments.joined(separator: " ")) failed (\(process.terminationStatus)):\n\(diagnostics.text)")
        }
        return collected.text
    }

    /// `swift package describe --type json` of the package. Run with a scratch path of its own:
    /// the package's `.build` is locked by the `swift test` running this test, and describing
    /// reads only the root manifest, so nothing is fetched or built there.
    static func describePackage() throws -> [String: Any] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-describe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let text = try output(
            of: [
                "swift", "package", "--package-path", BuildProducts.packageRoot.path, "--scratch-path", scratch.path, "describe", "--type",
                "json",
            ], in: scratch.deletingLastPathComponent(), timeout: .seconds(90))
        guard let package = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw SandboxError("swift package describe printed no JSON object:\n\(text)")
        }
        return package
    }

    /// Every target the product's targets depend on, directly or not, each with the chain of
    /// dependencies that pulls it in (`switchyard → SwitchyardRuntime → …`).
    static func closure(ofProduct product: String, in package: [String: Any]) throws -> [String: (path: String, chain: [String])] {
        let products = package["products"] as? [[String: Any]] ?? []
        let targets = package["targets"] as? [[String: Any]] ?? []
        let byName = Dictionary(targets.compactMap { target in (target["name"] as? String).map { ($0, target) } }) { first, _ in first }
        guard let roots = products.first(where: { $0["name"] as? String == product })?["targets"] as? [String] else {
            throw SandboxError("the package has no product '\(product)'")
        }
        var found: [String: (path: String, chain: [String])] = [:]
        var queue = roots.map { ($0, [$0]) }
        while let (name, chain) = queue.first {
            queue.removeFirst()
            guard found[name] == nil, let target = byName[name] else { continue }
            found[name] = (target["path"] as? String ?? "", chain)
            for dependency in target["target_dependencies"] as? [String] ?? [] { queue.append((dependency, chain + [dependency])) }
        }
        return found
    }

    @Test func theSwitchyardExecutableLinksNoPluginTarget() throws {
        let package = try Self.describePackage()
        let closure = try Self.closure(ofProduct: "switchyard", in: package)
        // The description is the real one: the executable and the runtime are in it.
        #expect(closure["switchyard"]?.path == "Sources/switchyard")
        #expect(closure["SwitchyardRuntime"] != nil)
        let pluginTargets = closure.filter { $0.value.path == "Plugins" || $0.value.path.hasPrefix("Plugins/") }
        #expect(
            pluginTargets.isEmpty,
            "the switchyard executable depends on targets under Plugins/: \(pluginTargets.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value.path)) via \($0.value.chain.joined(separator: " → "))" }.joined(separator: "; "))"
        )
    }

    /// Every shared library loading `file` loads, its dependencies' dependencies too, from `ldd`.
    static func loadedLibraries(of file: URL) throws -> [String] {
        // "\tlibcrypto.so.3 => /lib/x86_64-linux-gnu/libcrypto.so.3 (0x…)"
        try output(of: ["ldd", file.path], timeout: .seconds(30)).split(separator: "\n").compactMap { line in
            line.split(separator: " ").first.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    @Test func theBuiltExecutableLoadsNoCryptoLibrary() throws {
        // Not even through a dependency (FoundationNetworking's libcurl would bring libssl).
        let executable = try Self.loadedLibraries(of: BuildProducts.switchyard)
        #expect(executable.contains { $0.hasPrefix("libswiftCore") }, "\(executable)")
        #expect(!executable.contains { $0.hasPrefix("libcrypto") || $0.hasPrefix("libssl") }, "\(executable)")
        // The qeo plugin, which holds the realm authority, is where libcrypto is linked.
        let qeo = try Self.loadedLibraries(of: BuildProducts.plugin("qeo"))
        #expect(qeo.contains { $0.hasPrefix("libcrypto") }, "\(qeo)")
    }

    @Test func thePluginsThatOwnTheOldBuiltInCommandsStillHaveThem() throws {
        // The commands moved into the plugins rather than away: the push and qeo plugins link
        // the token registry and the realm authority the commands use.
        let package = try Self.describePackage()
        #expect(try Self.closure(ofProduct: "push", in: package)["PushTokens"] != nil)
        #expect(try Self.closure(ofProduct: "qeo", in: package)["QeoRealm"] != nil)
    }
}
