internal import SwitchyardABI
public import SwitchyardCore

/// The descriptors a plugin command reads and writes (section 8 of the ABI header).
public struct CommandDescriptors: Sendable, Hashable {
    /// Where the command reads its input.
    public var input: Int32
    /// Where it writes its output.
    public var output: Int32
    /// Where it writes errors and diagnostics.
    public var error: Int32

    /// Creates a set of descriptors.
    public init(input: Int32, output: Int32, error: Int32) {
        self.input = input
        self.output = output
        self.error = error
    }

    /// The process's own standard input, output and error: 0, 1 and 2.
    public static let standard = CommandDescriptors(input: 0, output: 1, error: 2)
}

/// Why a plugin command could not be called.
public struct PluginCommandError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, naming the plugin and the command.
    public var description: String
}

extension LoadedPlugin {
    /// Whether the plugin's table has the `command` entry (ABI v2); a plugin that declares
    /// commands without it cannot run them.
    public var hasCommandEntry: Bool { table.api.command != nil }

    /// The command the manifest declares as `name`.
    public func command(named name: String) -> PluginCommand? { manifest.commands.first { $0.name == name } }

    /// Calls the plugin's `command` entry for the declared command `name` with `arguments`, on
    /// this thread, and returns the exit status it returns. `program` is what the command calls
    /// itself in usage text (`switchyard qeo realm`). The call blocks for as long as the command
    /// runs. Throws when the manifest does not declare `name` or the plugin has no entry.
    public func runCommand(
        _ name: String, arguments: [String], program: String, descriptors: CommandDescriptors = .standard
    ) throws(PluginCommandError) -> Int32 {
        guard command(named: name) != nil else {
            throw PluginCommandError(description: "plugin '\(manifest.name)' (\(path)) declares no command '\(name)'")
        }
        guard let entry = table.api.command else {
            throw PluginCommandError(
                description:
                    "plugin '\(manifest.name)' (\(path)) declares command '\(name)' but its ABI \(abiVersion) table has no command entry"
            )
        }
        // Every string lives in one buffer for the length of the call: the views into it are
        // borrowed by the plugin only until `entry` returns (section 2 of the header).
        var storage: [UInt8] = []
        var ranges: [Range<Int>] = []
        for text in [name, program] + arguments {
            let start = storage.count
            storage.append(contentsOf: text.utf8)
            ranges.append(start..<storage.count)
        }
        return storage.withUnsafeBufferPointer { buffer in
            let views = ranges.map { range in
                sy_bytes(data: range.isEmpty ? nil : buffer.baseAddress.map { $0 + range.lowerBound }, length: range.count)
            }
            let argumentViews = Array(views[2...])
            return argumentViews.withUnsafeBufferPointer { argumentBuffer in
                var call = sy_command_call()
                call.struct_size = UInt32(MemoryLayout<sy_command_call>.size)
                call.name = views[0]
                call.program = views[1]
                call.arguments = argumentBuffer.baseAddress
                call.argument_count = argumentBuffer.count
                call.stdin_fd = descriptors.input
                call.stdout_fd = descriptors.output
                call.stderr_fd = descriptors.error
                return withUnsafePointer(to: call) { entry($0) }
            }
        }
    }
}
