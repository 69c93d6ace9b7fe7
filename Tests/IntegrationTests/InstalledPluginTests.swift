import Foundation
import Testing

@testable import IntegrationSupport

/// What the build and `scripts/install-plugins` make of a plugin: a shared object that exports
/// exactly its entry symbol (switchyard_plugin.h), installed without its symbol table and DWARF,
/// which go to a debug file beside it that the installed file names (`.gnu_debuglink`).
@Suite(.timeLimit(.minutes(2)))
struct InstalledPluginTests {
    static let plugins = ["core", "mqtt", "sip", "push", "qeo", "ble", "shout"]

    /// The global symbols a shared object defines in its dynamic symbol table (`nm -D`: an
    /// upper-case type letter is a global symbol, a lower-case one a local one).
    static func exportedSymbols(_ path: String) throws -> [String] {
        let result = try Tool.run("/usr/bin/nm", ["-D", "--defined-only", path])
        try #require(result.status == 0, "nm -D \(path): \(result.output)")
        return result.output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, let type = fields[1].first, type.isUppercase else { return nil }
            return String(fields[2])
        }
    }

    /// The names of an ELF file's sections (`readelf -S -W`).
    static func sections(_ path: String) throws -> Set<String> {
        let result = try Tool.run("/usr/bin/readelf", ["-S", "-W", path])
        try #require(result.status == 0, "readelf -S \(path): \(result.output)")
        return Set(
            result.output.split(separator: "\n").compactMap { line in
                guard let bracket = line.firstIndex(of: "]") else { return nil }
                return line[line.index(after: bracket)...].split(separator: " ").first.map(String.init)
            })
    }

    @Test(arguments: plugins)
    func aBuiltPluginExportsOnlyItsEntrySymbol(name: String) throws {
        #expect(try Self.exportedSymbols(BuildProducts.plugin(name).path) == ["switchyard_plugin_entry"])
    }

    @Test func installPluginsStripsEachPluginAndKeepsItsDebugFileBesideIt() throws {
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("install-plugins-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: destination) }
        let script = BuildProducts.packageRoot.appendingPathComponent("scripts/install-plugins").path
        let install = try Tool.run(script, [BuildProducts.directory.path, destination.path], timeout: .seconds(90))
        try #require(install.status == 0, "\(install.output)")
        for name in ["core", "mqtt", "sip", "push", "qeo", "ble"] {
            let installed = destination.appendingPathComponent("lib\(name).so").path
            let debugFile = destination.appendingPathComponent(".debug/lib\(name).so.debug").path
            let installedSections = try Self.sections(installed)
            #expect(!installedSections.contains(".symtab"), "\(installed) keeps its symbol table")
            #expect(!installedSections.contains(".debug_info"), "\(installed) keeps its DWARF")
            #expect(installedSections.contains(".gnu_debuglink"), "\(installed) does not name its debug file")
            let debugSections = try Self.sections(debugFile)
            #expect(debugSections.isSuperset(of: [".symtab", ".debug_info", ".debug_line"]), "\(debugFile): \(debugSections)")
            let link = try Tool.run("/usr/bin/readelf", ["--string-dump=.gnu_debuglink", installed])
            #expect(link.output.contains("lib\(name).so.debug"), "\(link.output)")
            #expect(try Self.exportedSymbols(installed) == ["switchyard_plugin_entry"])
        }
        // The router loads the stripped plugins.
        let list = try Tool.run(BuildProducts.switchyard.path, ["plugins", "list", "--plugins", destination.path], timeout: .seconds(30))
        #expect(list.status == 0, "\(list.output)")
        for name in ["core", "mqtt", "sip", "push", "qeo", "ble"] {
            #expect(list.output.contains(destination.appendingPathComponent("lib\(name).so").path), "\(list.output)")
        }
    }
}
