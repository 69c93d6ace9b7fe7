import Foundation
import Testing

@testable import IntegrationSupport

/// `switchyard PLUGIN COMMAND ARGS…`: commands the plugins bring, found in the plugin directory
/// and run through the ABI — the qeo plugin's `realm`, the push plugin's `tokens` and the C
/// example's `shout` — with their help, output and exit status passed through.
@Suite(.timeLimit(.minutes(2)))
struct PluginCommandLineTests {
    /// A sandbox with core, push, qeo and the C example compiled with `cc`.
    static func sandbox() throws -> Sandbox {
        let sandbox = try Sandbox.withUpperPlugin()
        try sandbox.installPlugin("push")
        try sandbox.installPlugin("qeo")
        return sandbox
    }

    /// Runs `switchyard --plugins <sandbox plugins> ARGUMENTS`.
    static func run(_ arguments: [String], in sandbox: Sandbox) throws -> (status: Int32, output: String, errors: String) {
        try RouterProcess.runToExit(["--plugins", sandbox.plugins.path] + arguments, in: sandbox.root, timeout: .seconds(30))
    }

    @Test func theCExampleShoutsThroughTheRouterBinary() throws {
        let sandbox = try Self.sandbox()
        let shout = try Self.run(["upper", "shout", "hello", "wörld-42"], in: sandbox)
        #expect(shout.status == 0, "\(shout.errors)")
        #expect(shout.output == "HELLO WöRLD-42\n")
        #expect(shout.errors.isEmpty)

        let nothing = try Self.run(["upper", "shout"], in: sandbox)
        #expect(nothing.status == 64)
        #expect(nothing.output.isEmpty)
        #expect(nothing.errors.contains("error: give at least one word"))
        #expect(nothing.errors.contains("USAGE: switchyard upper shout <word> ..."))

        let option = try Self.run(["upper", "shout", "--loud"], in: sandbox)
        #expect(option.status == 64)
        #expect(option.errors.contains("unknown option '--loud'"))

        let help = try Self.run(["upper", "shout", "--help"], in: sandbox)
        #expect(help.status == 0)
        #expect(help.output.hasPrefix("USAGE: switchyard upper shout <word> ..."))

        let unknown = try Self.run(["upper", "whisper", "hi"], in: sandbox)
        #expect(unknown.status == 64)
        #expect(unknown.errors.contains("plugin 'upper' has no command 'whisper' (its commands: shout)"))
    }

    @Test func helpListsThePluginCommandsOfTheDirectory() throws {
        let sandbox = try Self.sandbox()
        for arguments in [["--help"], ["help"], ["-h"]] {
            let help = try Self.run(arguments, in: sandbox)
            #expect(help.status == 0, "\(help.errors)")
            // The built-in help, then the plugin commands found.
            #expect(help.output.contains("SUBCOMMANDS:"))
            #expect(help.output.contains("validate"))
            #expect(help.output.contains("PLUGIN COMMANDS"))
            for line in ["push tokens", "qeo realm", "upper shout"] {
                #expect(help.output.contains("  \(line) "), "no '\(line)' in:\n\(help.output)")
            }
        }
        // The variable names the directory as --plugins does.
        let byVariable = try RouterProcess.runToExit(
            ["--help"], in: sandbox.root, environment: ["SWITCHYARD_PLUGINS": sandbox.plugins.path])
        #expect(byVariable.output.contains("  qeo realm "))
        // Without plugins it says where it looked and how to point it elsewhere.
        let empty = try Sandbox()
        let none = try Self.run(["--help"], in: empty)
        #expect(none.status == 0)
        #expect(none.output.contains("none found; name the plugin directory with --plugins <dir> or SWITCHYARD_PLUGINS"))
    }

    @Test func aPluginsHelpListsItsCommands() throws {
        let sandbox = try Self.sandbox()
        for arguments in [["qeo", "--help"], ["help", "qeo"]] {
            let help = try Self.run(arguments, in: sandbox)
            #expect(help.status == 0, "\(help.errors)")
            #expect(help.output.hasPrefix("USAGE: switchyard qeo <command> [<arguments> ...]"))
            #expect(help.output.contains("  realm  Create and manage a secured Qeo realm"))
        }
        let bare = try Self.run(["push"], in: sandbox)
        #expect(bare.status == 64)
        #expect(bare.errors.contains("  tokens  List or drop the FCM tokens"))
    }

    @Test func unknownPluginsAndCommandsAreUsageErrors() throws {
        let sandbox = try Self.sandbox()
        let plugin = try Self.run(["nosuch", "thing"], in: sandbox)
        #expect(plugin.status == 64)
        #expect(plugin.errors.contains("'nosuch' is neither a switchyard command nor a plugin in \(sandbox.plugins.path)"))
        let command = try Self.run(["qeo", "nosuch"], in: sandbox)
        #expect(command.status == 64)
        #expect(command.errors.contains("plugin 'qeo' has no command 'nosuch' (its commands: realm)"))
        let commandless = try Self.run(["core", "anything"], in: sandbox)
        #expect(commandless.status == 64)
        #expect(
            commandless.errors.contains("plugin 'core' (\(sandbox.plugins.appendingPathComponent("libcore.so").path)) declares no commands")
        )
    }

    @Test func realmCommandsKeepTheirOptionsOutputAndStatuses() throws {
        let sandbox = try Self.sandbox()
        let home = sandbox.path("home")
        let help = try Self.run(["qeo", "realm", "--help"], in: sandbox)
        #expect(help.status == 0, "\(help.errors)")
        #expect(help.output.contains("USAGE: switchyard qeo realm <subcommand>"))
        for subcommand in ["init", "add-user", "add-device", "policy"] { #expect(help.output.contains(subcommand)) }

        let missing = try Self.run(["qeo", "realm", "init"], in: sandbox)
        #expect(missing.status == 64)
        #expect(missing.errors.contains("Missing expected argument '<directory>'"))
        #expect(missing.errors.contains("switchyard qeo realm init"))

        let created = try Self.run(["qeo", "realm", "init", home, "--id", "0x77", "--domain", "131"], in: sandbox)
        #expect(created.status == 0, "\(created.errors)")
        #expect(created.output.hasPrefix("realm rid:"))
        #expect(created.output.hasSuffix(" on domain 131 in \(home)\n"))
        let user = try Self.run(["qeo", "realm", "add-user", home, "alice"], in: sandbox)
        #expect(user.output == "user uid:1 (alice)\n", "\(user.errors)")
        let device = try Self.run(["qeo", "realm", "add-device", home, "kitchen", "--user", "1"], in: sandbox)
        #expect(device.status == 0, "\(device.errors)")
        #expect(device.output.hasSuffix("/devices/1\n"))
        let policy = try Self.run(["qeo", "realm", "policy", home], in: sandbox)
        #expect(policy.status == 0)
        #expect(policy.output.contains("[meta]"))

        let badID = try Self.run(["qeo", "realm", "add-user", home, "bob", "--id", "zz"], in: sandbox)
        #expect(badID.status == 64)
        #expect(badID.errors.contains("--id: 'zz' is not a 64-bit number (decimal or 0x-hex)"))
        let notARealm = try Self.run(["qeo", "realm", "add-user", sandbox.path("nowhere"), "bob"], in: sandbox)
        #expect(notARealm.status == 1)
        #expect(notARealm.errors.contains("is not a realm directory"))
        let noFile = try Self.run(["qeo", "realm", "policy", home, sandbox.path("missing.ini")], in: sandbox)
        #expect(noFile.status == 1)
        #expect(noFile.errors.contains("error: \(sandbox.path("missing.ini")): No such file or directory"))
    }

    @Test func tokenListingSurvivesAHostileRegistry() throws {
        // A registry whose values an app chose (control characters in a token) or a damaged file
        // wrote (a time no clock can show) is listed, not trapped on or echoed raw.
        let sandbox = try Self.sandbox()
        let registry = sandbox.path("tokens.db")
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("CREATE TABLE push_tokens (token TEXT PRIMARY KEY NOT NULL, device TEXT, user TEXT, platform TEXT, "
                       "registered_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)")
            db.execute("INSERT INTO push_tokens VALUES (?, ?, NULL, NULL, ?, ?)",
                       ("tok\\t\\x1b[2Jen", "dev\\nice", 9223372036854775807, 1700000000))
            db.commit()
            """
        _ = try ExecutableDependencyTests.output(of: ["python3", "-c", script, registry], timeout: .seconds(30))
        let columns = try Self.run(["push", "tokens", "list", "--registry", registry], in: sandbox)
        #expect(columns.status == 0, "\(columns.errors)")
        #expect(columns.output == "tok??[2Jen\tdev?ice\t-\t-\t9223372036854775807\t2023-11-14T22:13:20.000Z\n")
        let json = try Self.run(["push", "tokens", "list", "--registry", registry, "--json"], in: sandbox)
        #expect(json.status == 0, "\(json.errors)")
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(object?["token"] as? String == "tok\t\u{1b}[2Jen")
        #expect(object?["registered_at"] as? String == "9223372036854775807")
    }

    @Test func tokenCommandsKeepTheirOptionsAndStatuses() throws {
        let sandbox = try Self.sandbox()
        let noRegistry = try Self.run(["push", "tokens", "list"], in: sandbox)
        #expect(noRegistry.status == 64)
        #expect(noRegistry.errors.contains("Missing expected argument '--registry <registry>'"))
        let unreadable = try Self.run(["push", "tokens", "list", "--registry", sandbox.path("none/tokens.db")], in: sandbox)
        #expect(unreadable.status == 1)
        #expect(unreadable.errors.contains("error: registry '\(sandbox.path("none/tokens.db"))'"))
        let subcommands = try Self.run(["push", "tokens"], in: sandbox)
        #expect(subcommands.status == 0)
        #expect(subcommands.output.contains("USAGE: switchyard push tokens <subcommand>"))
    }
}
