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

/// The route-file cases of issue 33: keys that are not names, many keys, control characters,
/// bytes that are not UTF-8, and files that are not regular files.
@Suite(.timeLimit(.minutes(1))) struct HostileRouteFileTests {
    private func load(_ text: String) -> [Diagnostic] {
        ConfigLoader(environment: [:]).load(sources: [(file: "r.yaml", text: text)]).1
    }

    @Test(arguments: [
        ("{ [a, b]: 1 }", "list", 3), ("? { a: 1 }\n: 2", "mapping", 3), ("x: &k a\n? [*k, *k]\n: 1", "list", 3),
    ])
    func aKeyThatIsNotANameIsAnErrorAtItsPlace(text: String, kind: String, column: Int) throws {
        let error = try #require(load(text).first { $0.message.contains("a mapping key must be a plain value") })
        #expect(error.message.hasSuffix("not a \(kind)"), "\(error)")
        #expect(error.location?.file == "r.yaml")
    }

    @Test func manyKeysLoadAndDuplicatesAreNamedWithTheFirst() throws {
        let keys = (0..<50_000).map { "  k\($0): 1" }.joined(separator: "\n")
        let diagnostics = load(
            "types:\n  - name: a.B\n    schema:\n      properties:\n" + keys.replacingOccurrences(of: "  k", with: "        k"))
        #expect(!diagnostics.contains { $0.message.contains("duplicate") })
        let duplicate = try #require(load("instances:\n  a: 1\n  b: 2\n  a: 3\n").first { $0.message.contains("duplicate key 'a'") })
        #expect(duplicate.message.contains("in the mapping at line 2"), "\(duplicate)")
        #expect(duplicate.location?.line == 4 && duplicate.location?.column == 3, "\(duplicate)")
    }

    @Test func aNulByteIsReportedWhereItIs() throws {
        let error = try #require(load("instances:\n  x: a\u{0}b\n").first)
        #expect(error.location?.line == 2 && error.location?.column == 7, "\(error)")
        #expect(error.message.contains("a NUL byte"))
    }

    @Test func bytesThatAreNotUTF8AreReportedWhereTheyAre() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("r.yaml")
        try Data("instances:\n  x: é\u{FF}".utf8.map { $0 == 0xC3 && false ? 0 : $0 } + [0xFF, 0xFE]).write(to: file)
        let error = try #require(ConfigLoader(environment: [:]).load(path: file.path).1.first)
        #expect(error.message.contains("not UTF-8 text"), "\(error)")
        #expect(error.location?.line == 2, "\(error)")
    }

    /// A FIFO would block the loader until something wrote to it: it is refused at once, named.
    @Test func aFIFOIsRefusedByNameAsAFileAndInAFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "instances: {}\n".write(to: folder.appendingPathComponent("a.yaml"), atomically: true, encoding: .utf8)
        let fifo = folder.appendingPathComponent("b.yaml").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let inFolder = ConfigLoader(environment: [:]).load(path: folder.path).1
        #expect(inFolder.contains { $0.message.contains("'\(fifo)' is a FIFO (named pipe), not a regular file") }, "\(inFolder)")
        let direct = ConfigLoader(environment: [:]).load(path: fifo).1
        #expect(direct.contains { $0.message.contains("is a FIFO (named pipe)") }, "\(direct)")
    }
}
