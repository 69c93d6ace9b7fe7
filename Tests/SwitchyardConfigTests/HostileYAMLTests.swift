import Foundation
import SwitchyardConfig
import SwitchyardCore
import Testing

/// Route files are input: whatever they hold, loading them ends with an answer, not with the
/// process growing without bound or trapping.
@Suite struct HostileYAMLTests {
    /// Nine levels of nine aliases each: 9^9 (387 million) leaves when expanded.
    @Test func nestedAliasesAreRefusedWithTheirPosition() throws {
        var lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
        for level in 1...9 {
            let uses = Array(repeating: "*a\(level - 1)", count: 9).joined(separator: ", ")
            lines.append("a\(level): &a\(level) [\(uses)]")
        }
        lines.append("routes: *a9")
        let (_, diagnostics) = ConfigLoader(environment: [:]).load(sources: [(file: "laughs.yaml", text: lines.joined(separator: "\n"))])
        let refusal = try #require(diagnostics.first { $0.message.contains("expands to more than") })
        #expect(refusal.location?.file == "laughs.yaml")
        #expect((refusal.location?.line ?? 0) >= 1)
    }

    @Test func aliasesWithinTheBudgetStillWork() {
        let text = """
            defaults: &clock { plugin: core, timer: { interval: 1s } }
            instances:
              a: *clock
              b: *clock
            """
        let (config, diagnostics) = ConfigLoader(environment: [:]).load(sources: [(file: "r.yaml", text: text)])
        #expect(diagnostics.filter { !$0.message.contains("defaults") }.isEmpty)
        #expect(config.instances.count == 2)
    }

    @Test func deepNestingIsAnErrorNotAStackOverflow() throws {
        let depth = 100_000
        let text = "routes: " + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let (_, diagnostics) = ConfigLoader(environment: [:]).load(sources: [(file: "deep.yaml", text: text)])
        let error = try #require(diagnostics.first)
        #expect(error.message.contains("invalid YAML"))
        #expect(error.location?.file == "deep.yaml")
    }

    @Test func anOversizedFileIsRefusedBeforeParsing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-yaml-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("huge.yaml")
        let line = Data("# \(String(repeating: "x", count: 1021))\n".utf8)
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        for _ in 0..<(ConfigLoader.maximumFileSize / line.count + 1) { handle.write(line) }
        try handle.close()
        let (_, diagnostics) = ConfigLoader(environment: [:]).load(path: file.path)
        #expect(diagnostics.contains { $0.message.contains("huge.yaml") && $0.message.contains("larger than") })
    }
}
