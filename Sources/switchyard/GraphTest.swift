import ArgumentParser
import Foundation
import Logging
import SwitchyardConfig
import SwitchyardCore
import SwitchyardGraphTest
import SwitchyardRuntime

/// `switchyard test`: YAML test cases for the whole graph, run offline against stand-ins of
/// every plugin instance.
struct GraphTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run YAML test cases against the whole graph, offline: inputs at source ports, expectations at sink ports.",
        discussion: """
            Every plugin instance is replaced by a stand-in with the real plugin's ports, types \
            and schemas (from its manifest and description); its code never runs, so no network \
            or peer is needed. The router itself runs: routes, conditions, maps, templates, \
            iiideas, the spool and dead letters. A test file has 'tests:' (each with 'input:' \
            and 'expect:'), and optionally 'routes:' and 'env:'; see README.md, "Testing a graph \
            offline". Exit status 0 when every case passes, 1 otherwise.
            """)

    @Argument(help: "A test file, or a folder whose *.yaml files are test files.")
    var tests: String = "Routes/tests"

    @Argument(help: "The route file or folder (default: the test file's 'routes:', else the folder above the test file's folder).")
    var routes: String?

    @Option(name: .long, help: "The plugin directory (overrides SWITCHYARD_PLUGINS and plugins.dir in the YAML; default Plugins).")
    var plugins: String?

    @Option(name: .long, help: "Write a JUnit XML report to this file (for CI).")
    var junit: String?

    @Option(name: .long, help: "Run only the cases whose name contains this text.")
    var filter: String?

    @Option(name: .long, help: "Log level of the router under test: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .error

    func run() throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return RedactingLogHandler(inner: handler)
        }
        let logger = Logger(label: "switchyard.test")
        let testFiles: [String]
        do {
            testFiles = try GraphTestFiles.list(tests)
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
        var suites: [GraphTestSuite] = []
        for file in testFiles { suites.append(runFile(file, logger: logger)) }
        let passed = suites.reduce(0) { $0 + $1.outcomes.filter(\.passed).count }
        let failed = suites.reduce(0) { $0 + $1.outcomes.count - $1.outcomes.filter(\.passed).count }
        let broken = suites.filter { $0.error != nil }.count
        func files(_ count: Int) -> String { count == 1 ? "1 file" : "\(count) files" }
        print("\(passed) passed, \(failed) failed" + (broken > 0 ? ", \(files(broken)) not run" : "") + " (\(files(testFiles.count)))")
        if let junit {
            do {
                try Data(GraphTestSuite.junit(suites).utf8).write(to: URL(fileURLWithPath: junit))
            } catch {
                printError("error: --junit \(junit): \(error)")
                throw ExitCode(1)
            }
        }
        if failed > 0 || broken > 0 { throw ExitCode(1) }
        // A filter that matches nothing ran nothing: that is not a pass (a typo in CI would
        // otherwise turn a suite green).
        if let filter, passed == 0 {
            printError("error: no test case's name contains '\(filter)' (in \(files(testFiles.count)))")
            throw ExitCode(1)
        }
    }

    /// Parses, loads the graph of and runs one test file, printing as it goes.
    private func runFile(_ path: String, logger: Logger) -> GraphTestSuite {
        var suite = GraphTestSuite(file: path)
        let text: String
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            let bytes = try handle.read(upToCount: GraphTestFiles.maximumBytes + 1) ?? Data()
            guard bytes.count <= GraphTestFiles.maximumBytes else {
                return suite.failing("\(path) is larger than \(GraphTestFiles.maximumBytes / (1024 * 1024)) MiB")
            }
            text = String(decoding: bytes, as: UTF8.self)
        } catch {
            return suite.failing("cannot read \(path): \(error)")
        }
        let (parsed, problems) = GraphTestFile.parse(text: text, path: path)
        guard let file = parsed else {
            for problem in problems { printError(problem.description) }
            return suite.failing(problems.map(\.description).joined(separator: "\n"))
        }
        let routesPath = routes ?? GraphTestFiles.routes(of: file)
        print("\(path) (routes \(routesPath))")
        guard let plan = loadPlan(routesPath, environment: ProcessEnvironment.current.merging(file.environment) { _, set in set })
        else { return suite.failing("the graph at \(routesPath) does not validate (see the errors above)") }
        let runner = GraphTestRunner(plan: plan, logger: logger)
        for testCase in file.cases where filter.map({ testCase.name.contains($0) }) ?? true {
            let outcome = runner.run(testCase)
            let seconds = String(format: "%.2fs", GraphTestSuite.seconds(outcome.duration))
            if outcome.passed {
                print("  PASS \(testCase.name) (\(seconds))")
            } else {
                print("  FAIL \(testCase.name) (\(testCase.location), \(seconds))")
                for line in outcome.failures { print("    " + Redaction.redact(line)) }
            }
            suite.outcomes.append(outcome)
        }
        return suite
    }

    /// The graph at `path`, validated with the real plugins (their `describe` runs; nothing starts).
    private func loadPlan(_ path: String, environment: [String: String]) -> GraphPlan? {
        let (config, configProblems) = ConfigLoader(environment: environment).load(path: path)
        Redaction.register(config.secrets)
        let directory = PluginCommandLine.directory(option: plugins, environment: environment, configured: config.pluginsDirectory?.value)
        let (loaded, refused) = PluginLoader.loadDirectory(directory)
        for error in refused { printError("error: \(error)") }
        let (plan, problems) = GraphValidator(plugins: loaded).validate(config)
        for problem in Diagnostics(configProblems + problems).items { printError(problem.description) }
        return configProblems.isEmpty && problems.isEmpty ? plan : nil
    }
}

/// Finding test files and their route files.
enum GraphTestFiles {
    /// The largest test file read.
    static let maximumBytes = 4 << 20

    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    /// `path` itself, or the sorted `*.yaml`/`*.yml` files of a folder.
    static func list(_ path: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw Problem(description: "no test file or folder at '\(path)'")
        }
        guard isDirectory.boolValue else { return [path] }
        let names = try FileManager.default.contentsOfDirectory(atPath: path).filter {
            !$0.hasPrefix(".") && ($0.hasSuffix(".yaml") || $0.hasSuffix(".yml"))
        }
        guard !names.isEmpty else { throw Problem(description: "no test files (*.yaml) in '\(path)'") }
        return names.sorted().map { (path as NSString).appendingPathComponent($0) }
    }

    /// The routes a test file is about: its `routes:` (relative to its folder), else the folder
    /// above its own (tests live in a `tests/` folder beside the route files, which a folder
    /// of route files does not read).
    static func routes(of file: GraphTestFile) -> String {
        let folder = (file.path as NSString).deletingLastPathComponent
        if let routes = file.routes {
            return routes.hasPrefix("/") ? routes : ((folder.isEmpty ? "." : folder) as NSString).appendingPathComponent(routes)
        }
        let parent = ((folder.isEmpty ? "." : folder) as NSString).deletingLastPathComponent
        return parent.isEmpty ? "." : parent
    }
}

/// The outcomes of one test file, for the summary and the JUnit report.
struct GraphTestSuite {
    var file: String
    var outcomes: [GraphTestOutcome] = []
    /// Why the file's cases did not run (it does not parse, its graph does not validate).
    var error: String?

    func failing(_ reason: String) -> GraphTestSuite {
        if !reason.contains("\n") { printError("error: \(reason)") }
        var copy = self
        copy.error = reason
        return copy
    }

    /// `duration` in seconds.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    /// The JUnit XML of `suites`: one `testsuite` per file, one `testcase` per case.
    static func junit(_ suites: [GraphTestSuite]) -> String {
        func escaped(_ text: String) -> String {
            var result = ""
            for character in Redaction.redact(text) {
                switch character {
                case "&": result += "&amp;"
                case "<": result += "&lt;"
                case ">": result += "&gt;"
                case "\"": result += "&quot;"
                default: result.append(character)
                }
            }
            return result
        }
        func seconds(_ duration: Duration) -> String { String(format: "%.3f", Self.seconds(duration)) }
        let total = suites.reduce(0) { $0 + $1.outcomes.count }
        let failures = suites.reduce(0) { $0 + $1.outcomes.filter { !$0.passed }.count }
        let errors = suites.filter { $0.error != nil }.count
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"switchyard test\" tests=\"\(total)\" failures=\"\(failures)\" errors=\"\(errors)\">\n"
        for suite in suites {
            let failed = suite.outcomes.filter { !$0.passed }.count
            let time = seconds(suite.outcomes.reduce(Duration.zero) { $0 + $1.duration })
            xml +=
                "  <testsuite name=\"\(escaped(suite.file))\" tests=\"\(suite.outcomes.count)\" failures=\"\(failed)\" errors=\"\(suite.error == nil ? 0 : 1)\" time=\"\(time)\">\n"
            if let error = suite.error {
                xml += "    <testcase name=\"(file)\" classname=\"\(escaped(suite.file))\">\n"
                xml += "      <error message=\"the file's cases did not run\">\(escaped(error))</error>\n    </testcase>\n"
            }
            for outcome in suite.outcomes {
                xml +=
                    "    <testcase name=\"\(escaped(outcome.name))\" classname=\"\(escaped(suite.file))\" time=\"\(seconds(outcome.duration))\""
                if outcome.passed {
                    xml += "/>\n"
                    continue
                }
                xml += ">\n      <failure message=\"\(escaped(outcome.failures.first ?? "failed"))\">"
                xml += escaped("\(outcome.location)\n" + outcome.failures.joined(separator: "\n"))
                xml += "</failure>\n    </testcase>\n"
            }
            xml += "  </testsuite>\n"
        }
        return xml + "</testsuites>\n"
    }
}
