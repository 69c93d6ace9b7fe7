import Foundation
import Testing

/// Which module may import which: the layering docs/architecture.md draws, checked on the
/// sources' `import` lines (what the compiler sees, transitive imports included), not only on
/// the manifest's declared dependencies.
struct ModuleDependencyTests {
    /// The package's own modules under `Sources/` and the ones each may import. A module
    /// missing here, or an import missing from its list, fails: adding an edge is a decision
    /// written down here, not a side effect. Plugin modules appear in no list: the router and
    /// its libraries know no protocol.
    static let layers: [String: Set<String>] = [
        "SwitchyardCore": [],
        "SwitchyardABI": [],
        "CLua": [],
        "CSQLite": [],
        "CSwitchyardScript": [],
        "SwitchyardNetworkText": [],
        "SwitchyardConnectionGuard": [],
        "SwitchyardBridge": ["SwitchyardABI", "SwitchyardCore"],
        "SwitchyardRouting": ["SwitchyardCore"],
        "SwitchyardScript": ["CSwitchyardScript", "SwitchyardCore"],
        "SwitchyardStore": ["SwitchyardCore"],
        "SwitchyardSQLite": ["CSQLite"],
        "SwitchyardSQLiteStore": ["SwitchyardCore", "SwitchyardSQLite", "SwitchyardStore"],
        "SwitchyardSpool": ["SwitchyardCore", "SwitchyardSQLite", "SwitchyardSQLiteStore", "SwitchyardStore"],
        "SwitchyardPostgres": ["SwitchyardCore", "SwitchyardStore"],
        "SwitchyardConfig": ["SwitchyardCore", "SwitchyardScript", "SwitchyardStore"],
        "SwitchyardAdminClient": ["SwitchyardCore"],
        "SwitchyardPluginKit": ["SwitchyardABI", "SwitchyardBridge", "SwitchyardCore"],
        "SwitchyardPluginHTTP": ["SwitchyardConnectionGuard", "SwitchyardCore", "SwitchyardPluginKit"],
        "SwitchyardPluginCommands": ["SwitchyardAdminClient", "SwitchyardPluginKit"],
        "SwitchyardRuntime": [
            "SwitchyardABI", "SwitchyardBridge", "SwitchyardConfig", "SwitchyardCore", "SwitchyardRouting", "SwitchyardSQLiteStore",
            "SwitchyardScript", "SwitchyardSpool", "SwitchyardStore",
        ],
        // Above the router: it runs iiidea routes through the runtime's `IiideaEngine`.
        "SwitchyardIiideas": [
            "SwitchyardABI", "SwitchyardConfig", "SwitchyardCore", "SwitchyardNetworkText", "SwitchyardRouting", "SwitchyardRuntime",
            "SwitchyardScript", "SwitchyardSpool", "SwitchyardStore",
        ],
        "SwitchyardGraphTest": [
            "SwitchyardABI", "SwitchyardBridge", "SwitchyardConfig", "SwitchyardCore", "SwitchyardIiideas", "SwitchyardRouting",
            "SwitchyardRuntime", "SwitchyardScript", "SwitchyardSpool",
        ],
        "SwitchyardAdmin": [
            "SwitchyardAdminClient", "SwitchyardConfig", "SwitchyardConnectionGuard", "SwitchyardCore", "SwitchyardIiideas",
            "SwitchyardRuntime", "SwitchyardSpool", "SwitchyardStore",
        ],
        "switchyard": [
            "SwitchyardAdmin", "SwitchyardAdminClient", "SwitchyardConfig", "SwitchyardCore", "SwitchyardGraphTest", "SwitchyardIiideas",
            "SwitchyardPostgres", "SwitchyardRuntime", "SwitchyardSQLiteStore", "SwitchyardSpool", "SwitchyardStore",
        ],
    ]

    /// The system's and the toolchain's modules: any module may import them.
    static let system: Set<String> = ["Darwin", "Glibc", "Musl", "Dispatch", "Synchronization", "Foundation", "FoundationEssentials"]

    /// Third-party modules (from the Dependencies package) and the only modules, or folders or
    /// files of a module, that may import them: the HTTP client and crypto stay with the code that talks to
    /// the outside world, the YAML parser with the loader, PostgreSQL with its store.
    static let thirdParty: [String: [String]] = [
        "AsyncHTTPClient": ["SwitchyardNetworkText", "SwitchyardIiideas/HTTPPiece", "SwitchyardIiideas/OAuth"],
        // The admin token's comparison, OAuth's sealed tokens, and the digest of a dedupe key.
        "Crypto": ["SwitchyardAdmin", "SwitchyardIiideas/OAuth", "SwitchyardRuntime/Router/RouteDedupe.swift"],
        "NIOSSL": ["SwitchyardNetworkText"],
        "Yams": ["SwitchyardConfig"],
        "PostgresNIO": ["SwitchyardPostgres"],
        "Hummingbird": ["SwitchyardAdmin", "SwitchyardPluginHTTP"],
        "HummingbirdCore": ["SwitchyardAdmin", "SwitchyardPluginHTTP"],
        "ArgumentParser": ["switchyard", "SwitchyardPluginCommands"],
        "Mustache": ["SwitchyardRouting", "SwitchyardAdmin"],
        "OTel": ["switchyard"],
        "UnixSignals": ["switchyard"],
        "ServiceLifecycle": ["switchyard", "SwitchyardAdmin", "SwitchyardPluginHTTP"],
        "Prometheus": ["SwitchyardAdmin"],
        "HTTPTypes": ["SwitchyardAdmin", "SwitchyardConnectionGuard"],
        "NIOHTTPTypes": ["SwitchyardConnectionGuard"],
        "NIOHTTP1": ["SwitchyardIiideas/HTTPPiece", "SwitchyardIiideas/OAuth"],
        "NIOPosix": ["SwitchyardNetworkText", "SwitchyardPostgres"],
        "NIOCore": [
            "SwitchyardNetworkText", "SwitchyardConnectionGuard", "SwitchyardPostgres", "SwitchyardAdmin", "SwitchyardIiideas/HTTPPiece",
            "SwitchyardIiideas/OAuth",
        ],
        "Logging": [
            "SwitchyardRuntime", "SwitchyardIiideas", "SwitchyardGraphTest", "SwitchyardAdmin", "SwitchyardPostgres",
            "SwitchyardPluginHTTP", "switchyard",
        ],
        "Metrics": ["SwitchyardAdmin"],
        "CoreMetrics": ["SwitchyardRuntime", "SwitchyardAdmin"],
        "Tracing": ["SwitchyardRuntime", "switchyard"],
        "DequeModule": ["SwitchyardRuntime"],
    ]

    /// The modules that must not import Foundation: the envelope, the routing language, the C
    /// bridge and the plugin SDK load into every plugin, and Foundation is most of a process's
    /// file pages (issue 37's lighter process).
    static let withoutFoundation: Set<String> = ["SwitchyardCore", "SwitchyardRouting", "SwitchyardBridge", "SwitchyardPluginKit"]

    /// An `import` line of a Swift file: the imported module, and where.
    struct Import: CustomStringConvertible {
        var module: String
        var file: String
        var line: Int
        var description: String { "\(file):\(line) imports \(module)" }
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every import under `Sources/`, by module (the folder under `Sources/`).
    static func sourceImports() throws -> [String: [Import]] {
        let sources = root.appendingPathComponent("Sources")
        let pattern = try Regex(
            #"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#
        )
        var imports: [String: [Import]] = [:]
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources.path)
        for module in modules {
            let folder = sources.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: folder.path) else { continue }
            imports[module, default: []] += []
            for case let relative as String in files where relative.hasSuffix(".swift") {
                let text = try String(contentsOf: folder.appendingPathComponent(relative), encoding: .utf8)
                for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    guard let match = try pattern.firstMatch(in: String(line)), let name = match.output[1].substring else { continue }
                    imports[module, default: []].append(
                        Import(module: String(name), file: "Sources/\(module)/\(relative)", line: index + 1))
                }
            }
        }
        return imports
    }

    /// What breaks the rules above in `imports`, one sentence each.
    static func violations(_ imports: [String: [Import]]) -> [String] {
        var violations: [String] = []
        for (module, found) in imports.sorted(by: { $0.key < $1.key }) {
            guard let allowed = layers[module] else {
                violations.append("Sources/\(module) is a module this test does not know: give it a layer in ModuleDependencyTests.layers")
                continue
            }
            for item in found where item.module != module && !system.contains(item.module) {
                if let owners = thirdParty[item.module] {
                    if !owners.contains(where: { $0 == module || item.file == "Sources/\($0)" || item.file.hasPrefix("Sources/\($0)/") }) {
                        violations.append("\(item): only \(owners.joined(separator: ", ")) may")
                    }
                } else if !allowed.contains(item.module) {
                    violations.append("\(item), which its layer does not allow (plugins and higher layers are out of reach)")
                }
            }
            if withoutFoundation.contains(module) {
                for item in found where item.module == "Foundation" {
                    violations.append("\(item): this module is kept free of Foundation")
                }
            }
        }
        return violations
    }

    @Test func everyModuleImportsOnlyWhatItsLayerAllows() throws {
        let imports = try Self.sourceImports()
        // The scan is real: it finds the modules and their imports.
        #expect(imports["SwitchyardRuntime"]?.contains { $0.module == "SwitchyardCore" } == true)
        #expect(imports.count >= Self.layers.count)
        let violations = Self.violations(imports)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    @Test func theRulesRefuseAPluginAHigherLayerAStrayClientAndFoundationInTheCore() {
        let violations = Self.violations([
            "SwitchyardRuntime": [
                Import(module: "MQTTPlugin", file: "Sources/SwitchyardRuntime/Router/Router.swift", line: 1),
                Import(module: "SwitchyardAdmin", file: "Sources/SwitchyardRuntime/Router/Router.swift", line: 2),
                Import(module: "AsyncHTTPClient", file: "Sources/SwitchyardRuntime/Router/Router.swift", line: 3),
            ],
            "SwitchyardIiideas": [
                Import(module: "AsyncHTTPClient", file: "Sources/SwitchyardIiideas/OAuth/OAuthVault.swift", line: 1),
                Import(module: "AsyncHTTPClient", file: "Sources/SwitchyardIiideas/Runs/IiideaRunner.swift", line: 1),
            ],
            "SwitchyardCore": [Import(module: "Foundation", file: "Sources/SwitchyardCore/JSON/JSONValue.swift", line: 1)],
            "SwitchyardMystery": [],
        ])
        #expect(violations.count == 6, "\(violations)")
        #expect(violations.contains { $0.contains("Router.swift:1 imports MQTTPlugin") })
        #expect(violations.contains { $0.contains("Router.swift:3 imports AsyncHTTPClient: only") })
        #expect(!violations.contains { $0.contains("OAuthVault.swift") })
        #expect(violations.contains { $0.contains("IiideaRunner.swift:1 imports AsyncHTTPClient: only") })
        #expect(violations.contains { $0.contains("kept free of Foundation") })
        #expect(violations.contains { $0.contains("Sources/SwitchyardMystery is a module this test does not know") })
    }
}
