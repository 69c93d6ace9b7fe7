import Foundation
import Testing

@testable import IntegrationSupport

/// Every error path of the command line a new user is likely to hit, run once: each one fails,
/// says what went wrong in a sentence that names the file, address or setting, and carries no
/// library's type dump (Foundation's `Error Domain=…`, NIO's error types, Swift enum cases,
/// `Optional(…)`) and no mask where no secret was configured.
@Suite(.timeLimit(.minutes(2)))
struct CLIErrorSweepTests {
    /// What a user must never read.
    static let forbidden = [
        "Error Domain=", "NSCocoaErrorDomain", "UserInfo=", "SingleConnectionFailure", "errno: ", "Optional(", "DecodingError",
        "ParserError", "Swift.", "expectedSectionEnd", "unfinishedName", "sectionCloseNameIncorrect", "***", "Fatal error",
    ]

    struct Case: CustomStringConvertible {
        var arguments: [String]
        /// A fragment the error must contain: the file, address or setting it is about.
        var names: String
        var description: String { arguments.joined(separator: " ") }
    }

    @Test func everyErrorIsASentenceWithoutALibrarysWords() throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let plugins = sandbox.plugins.path
        func file(_ name: String, _ text: String) throws -> String {
            let path = sandbox.path(name)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let tab = try file("tab.yaml", "instances:\n\tclock: { plugin: core, timer: { interval: 1s } }\n")
        let colon = try file("colon.yaml", "routes:\n  - { from: a.b, to: c.d, when: subject: x }\n")
        let template = try file(
            "template.yaml",
            """
            instances:
              clock: { plugin: core, timer: { interval: 1s } }
              out: { plugin: core, console: {} }
            routes:
              - { from: clock.tick, to: out.print, template: "{{#body.count}} open" }
            """)
        let good = try file("good.yaml", "instances:\n  clock: { plugin: core, timer: { interval: 1s } }\n")
        let unknownKey = try file("key.yaml", "instances:\n  clock: { plugin: core, timer: { interval: 1s, every: 2 } }\n")
        let closed = try LoopbackPort.free()
        let cases: [Case] = [
            Case(arguments: ["validate", tab, "--plugins", plugins], names: "tab.yaml:2:1"),
            Case(arguments: ["validate", colon, "--plugins", plugins], names: "colon.yaml:2:"),
            Case(arguments: ["validate", template, "--plugins", plugins], names: "template.yaml:5:"),
            Case(arguments: ["validate", unknownKey, "--plugins", plugins], names: "every"),
            Case(arguments: ["validate", sandbox.path("nowhere"), "--plugins", plugins], names: "nowhere"),
            Case(arguments: ["run", sandbox.path("nowhere"), "--plugins", plugins], names: "nowhere"),
            Case(arguments: ["graph", sandbox.path("nowhere"), "--plugins", plugins], names: "nowhere"),
            Case(
                arguments: ["explain", good, "--plugins", plugins, "--from", "clock.tick", "--envelope", "missing.json"],
                names: "missing.json"),
            Case(arguments: ["plugins", "inspect", "/etc/passwd"], names: "/etc/passwd"),
            Case(arguments: ["dlq", "list"], names: "state/spool.db"),
            Case(arguments: ["dlq", "list", "--spool", "typo.db"], names: "typo.db"),
            Case(arguments: ["spool", "recover", sandbox.path("nowhere.db")], names: "nowhere.db"),
            Case(arguments: ["tap", "clock.tick", "--admin", "127.0.0.1:\(closed)"], names: "127.0.0.1:\(closed)"),
            Case(arguments: ["top", "--admin", "127.0.0.1:\(closed)", "--iterations", "1"], names: "127.0.0.1:\(closed)"),
            Case(arguments: ["iiidea", "list", "--admin", "127.0.0.1:\(closed)"], names: "127.0.0.1:\(closed)"),
            Case(arguments: ["reload", "--admin", "127.0.0.1:\(closed)"], names: "127.0.0.1:\(closed)"),
            Case(arguments: ["tap", "clock.tick", "--admin", "not an address"], names: "not an address"),
            Case(arguments: ["run", good, "--plugins", plugins, "--drain-timeout", "soon"], names: "'soon'"),
            Case(arguments: ["store", "check", template, "--url", "postgres://u:pw@127.0.0.1/db"], names: "--url"),
            Case(arguments: ["nosuchcommand"], names: "nosuchcommand"),
        ]
        for command in cases {
            let result = try RouterProcess.runToExit(command.arguments, in: sandbox.root, timeout: .seconds(30))
            let said = result.errors + result.output
            #expect(result.status != 0, "\(command) succeeded: \(said)")
            #expect(said.contains(command.names), "\(command) does not name '\(command.names)': \(said)")
            for pattern in Self.forbidden {
                #expect(!said.contains(pattern), "\(command) prints '\(pattern)': \(said)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("state")), "no command created a spool")
    }
}
