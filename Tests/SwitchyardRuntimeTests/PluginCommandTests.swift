import Foundation
import SwitchyardABI
import SwitchyardBridge
import SwitchyardCore
import Synchronization
import Testing

@testable import SwitchyardRuntime

#if canImport(Glibc)
    import Glibc
#endif

// A plugin with commands, linked into the test binary: its `command` entry records the call it
// got, writes its program name to the output descriptor it was given and returns the status
// its first argument names ("status=N").

nonisolated(unsafe) let commandManifest = processLifetimeBytes(
    #"{"name": "tool", "version": "1.0.0", "description": "has\u001b[2J commands", "ports": [],"#
        + #""commands": [{"name": "shout", "summary": "Say it \u001b[31mloud"}, {"name": "count", "summary": "Count"}]}"#)

/// What the last `command` call received.
struct SeenCommandCall: Sendable {
    var structSize: UInt32
    var name: String
    var program: String
    var arguments: [String]
    var descriptors: [Int32]
}

let lastCommandCall = Mutex<SeenCommandCall?>(nil)

let commandPluginEntry: sy_entry_fn = { _, table, capacity in
    guard let table, capacity >= MemoryLayout<sy_plugin_api_v2>.size else { return 0 }
    fillFakeTable(table, manifest: commandManifest)
    let api = table.assumingMemoryBound(to: sy_plugin_api_v2.self)
    api.pointee.struct_size = UInt32(MemoryLayout<sy_plugin_api_v2>.size)
    api.pointee.command = { call in
        guard let call else { return 70 }
        let raw = call.pointee
        let arguments = (0..<raw.argument_count).map { index in raw.arguments.map { $0[index].string } ?? "" }
        let seen = SeenCommandCall(
            structSize: raw.struct_size, name: raw.name.string, program: raw.program.string, arguments: arguments,
            descriptors: [raw.stdin_fd, raw.stdout_fd, raw.stderr_fd])
        lastCommandCall.withLock { $0 = seen }
        let line = Array((seen.program + "\n").utf8)
        _ = line.withUnsafeBytes { write(raw.stdout_fd, $0.baseAddress, $0.count) }
        return arguments.first.flatMap { $0.hasPrefix("status=") ? Int32($0.dropFirst(7)) : nil } ?? 0
    }
    return SY_ABI_VERSION_2
}

/// The same manifest on ABI version 1, which has no command entry.
let commandPluginEntryV1: sy_entry_fn = { _, table, _ in
    fillFakeTable(table, manifest: commandManifest)
    return SY_ABI_VERSION_1
}

/// A pipe whose read end collects what a command writes to the write end.
struct CommandPipe: ~Copyable {
    let read: Int32
    let write: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw PluginCommandError(description: "pipe failed") }
        (read, write) = (ends[0], ends[1])
    }

    /// Closes the write end and reads everything written.
    consuming func text() -> String {
        close(write)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(read, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        close(read)
        return String(decoding: bytes, as: UTF8.self)
    }
}

@Suite(.serialized) struct PluginCommandTests {
    static func plugin() throws -> LoadedPlugin { try PluginLoader.negotiate(entry: commandPluginEntry, path: "/plugins/libtool.so") }

    @Test func theCallCarriesNameProgramArgumentsAndDescriptors() throws {
        let plugin = try Self.plugin()
        #expect(plugin.hasCommandEntry)
        #expect(plugin.manifest.commands.map(\.name) == ["shout", "count"])
        let output = try CommandPipe()
        let arguments = ["status=3", "", "héllo wörld", "--flag"]
        let status = try plugin.runCommand(
            "shout", arguments: arguments, program: "switchyard tool shout",
            descriptors: CommandDescriptors(input: 0, output: output.write, error: 2))
        #expect(status == 3)
        #expect(output.text() == "switchyard tool shout\n")
        let call = try #require(lastCommandCall.withLock { $0 })
        #expect(call.structSize == UInt32(MemoryLayout<sy_command_call>.size))
        #expect(call.name == "shout")
        #expect(call.program == "switchyard tool shout")
        #expect(call.arguments == arguments)
        #expect(call.descriptors[0] == 0 && call.descriptors[2] == 2 && call.descriptors[1] > 2)
    }

    @Test func noArgumentsIsAnEmptyList() throws {
        let status = try Self.plugin().runCommand("count", arguments: [], program: "p")
        #expect(status == 0)
        #expect(lastCommandCall.withLock { $0?.arguments } == [])
        #expect(lastCommandCall.withLock { $0?.descriptors } == [0, 1, 2])
    }

    @Test func anUndeclaredCommandIsRefusedWithoutCallingThePlugin() throws {
        lastCommandCall.withLock { $0 = nil }
        #expect {
            _ = try Self.plugin().runCommand("whisper", arguments: [], program: "p")
        } throws: { error in
            "\(error)".contains("plugin 'tool' (/plugins/libtool.so) declares no command 'whisper'")
        }
        #expect(lastCommandCall.withLock { $0 } == nil)
    }

    @Test func aVersionOnePluginDeclaringCommandsCannotRunThem() throws {
        let plugin = try PluginLoader.negotiate(entry: commandPluginEntryV1, path: "/plugins/libold.so")
        #expect(plugin.abiVersion == 1)
        #expect(!plugin.hasCommandEntry)
        let errors = try CommandPipe()
        let status = PluginCommandLine.run(
            plugin, command: "shout", arguments: [], descriptors: CommandDescriptors(input: 0, output: 1, error: errors.write))
        #expect(status == PluginCommandLine.softwareStatus)
        #expect(errors.text().contains("declares command 'shout' but its ABI 1 table has no command entry"))
    }

    @Test func statusesPassThroughAndImpossibleOnesBecomeSoftwareErrors() throws {
        let plugin = try Self.plugin()
        for status: Int32 in [0, 1, 64, 255] {
            #expect(PluginCommandLine.run(plugin, command: "count", arguments: ["status=\(status)"]) == status)
        }
        for status: Int32 in [256, -1, 512] {
            let errors = try CommandPipe()
            let result = PluginCommandLine.run(
                plugin, command: "count", arguments: ["status=\(status)"],
                descriptors: CommandDescriptors(input: 0, output: 1, error: errors.write))
            #expect(result == 70)
            #expect(errors.text() == "error: switchyard tool count returned exit status \(status), outside 0-255\n")
        }
        #expect(lastCommandCall.withLock { $0?.program } == "switchyard tool count")
    }

    @Test func thePluginDirectoryComesFromTheOptionTheVariableOrTheDefault() {
        let environment = [PluginCommandLine.directoryVariable: "/opt/plugins"]
        let option = PluginCommandLine(arguments: ["--plugins", "/p", "qeo", "realm"], environment: environment)
        #expect(option.directory == "/p")
        #expect(option.words == ["qeo", "realm"])
        let equals = PluginCommandLine(arguments: ["--plugins=/q", "push"], environment: environment)
        #expect(equals.directory == "/q")
        #expect(equals.words == ["push"])
        let variable = PluginCommandLine(arguments: ["qeo", "--plugins", "/x"], environment: environment)
        #expect(variable.directory == "/opt/plugins")
        #expect(variable.words == ["qeo", "--plugins", "/x"])
        #expect(PluginCommandLine(arguments: ["qeo"], environment: [:]).directory == "Plugins")
        #expect(PluginCommandLine(arguments: ["qeo"], environment: [PluginCommandLine.directoryVariable: ""]).directory == "Plugins")
        // A route file's plugins.dir comes after the option and the variable.
        #expect(PluginCommandLine.directory(option: "/p", environment: environment, configured: "/yaml") == "/p")
        #expect(PluginCommandLine.directory(option: nil, environment: environment, configured: "/yaml") == "/opt/plugins")
        #expect(PluginCommandLine.directory(option: nil, environment: [:], configured: "/yaml") == "/yaml")
        #expect(PluginCommandLine.directory(option: nil, environment: [:], installed: nil) == "Plugins")
        // An installed router's own folder comes after the route file's plugins.dir.
        #expect(
            PluginCommandLine.directory(option: nil, environment: [:], installed: "/usr/bin/../lib/switchyard/plugins")
                == "/usr/bin/../lib/switchyard/plugins")
        #expect(PluginCommandLine.directory(option: nil, environment: [:], configured: "/yaml", installed: "/usr/lib") == "/yaml")
        // A trailing `--plugins` is the default command's problem, not a directory.
        #expect(PluginCommandLine(arguments: ["--plugins"], environment: [:]).words == ["--plugins"])
    }

    @Test func builtInCommandsOptionsAndRoutePathsAreLeftToTheParser() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-no-plugins-\(UUID().uuidString)").path
        let builtIns: Set<String> = ["run", "validate", "plugins"]
        func resolve(_ arguments: [String], isPath: @escaping (String) -> Bool = { _ in false }) -> PluginCommandLine.Resolution {
            PluginCommandLine(arguments: ["--plugins", empty] + arguments, environment: [:]).resolve(
                builtInCommands: builtIns, isPath: isPath)
        }
        for arguments in [
            [], ["run", "x"], ["plugins", "list"], ["--version"], ["-h", "run"], ["routes.yaml"], ["./Routes"], ["help", "run"],
        ] {
            guard case .builtIn = resolve(arguments) else {
                Issue.record("\(arguments) should go to the argument parser")
                continue
            }
        }
        guard case .builtIn = resolve(["Routes"], isPath: { $0 == "Routes" }) else {
            Issue.record("an existing route directory should run")
            return
        }
        for arguments in [["--help"], ["-h"], ["help"]] {
            guard case .rootHelp = resolve(arguments) else {
                Issue.record("\(arguments) should be the help")
                continue
            }
        }
        guard case .usageError(let message) = resolve(["nosuch", "thing"]) else {
            Issue.record("an unknown word should be a usage error")
            return
        }
        #expect(message.contains("'nosuch' is neither a switchyard command nor a plugin in \(empty)"))
    }

    @Test func pluginHelpListsItsCommandsWithoutTerminalEscapes() throws {
        let help = PluginCommandLine.help(for: try Self.plugin())
        #expect(help.hasPrefix("USAGE: switchyard tool <command> [<arguments> ...]\n"))
        #expect(help.contains("  shout  Say it  [31mloud\n"))
        #expect(help.contains("  count  Count\n"))
        #expect(help.contains("has [2J commands"))
        #expect(!help.unicodeScalars.contains { $0.properties.generalCategory == .control && $0 != "\n" })
    }

    @Test func pluginNamesAreManifestNames() {
        #expect(PluginCommandLine.isPluginName("qeo"))
        #expect(PluginCommandLine.isPluginName("my-plugin_2"))
        for word in ["", "a.yaml", "a/b", "..", "ünï", String(repeating: "x", count: 65)] {
            #expect(!PluginCommandLine.isPluginName(word), "\(word)")
        }
    }
}
