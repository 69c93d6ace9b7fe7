public import ArgumentParser
public import SwitchyardPluginKit
import Synchronization

/// A command of a plugin's swift-argument-parser tree that writes through the descriptors of
/// the call (``CommandIO``) rather than the process's: `switchyard` hands a plugin command its
/// standard input, output and error, and the plugin may be given others.
public protocol PluginSubcommand: ParsableCommand {
    /// Runs the parsed command. Write output and errors through `io`; after writing why, throw
    /// `ExitCode(1)` for a failure, or a `ValidationError` for a usage error (status 64).
    func run(io: CommandIO) throws
}

/// Runs a plugin command whose arguments a swift-argument-parser command tree parses — help,
/// usage errors and exit statuses as `switchyard`'s built-in commands have them.
///
/// The root of the tree names itself with ``program`` so its usage reads as the call's
/// (`switchyard qeo realm init …`):
///
/// ```swift
/// struct Realm: ParsableCommand {
///     static var configuration: CommandConfiguration {
///         CommandConfiguration(commandName: PluginCommandRunner.program, subcommands: [Init.self])
///     }
/// }
///
/// static func runCommand(_ command: String, arguments: [String], io: CommandIO) -> Int32 {
///     PluginCommandRunner.run(Realm.self, arguments: arguments, io: io)
/// }
/// ```
public enum PluginCommandRunner {
    /// Set from the call before parsing; commands run one at a time on `switchyard`'s main
    /// thread, the lock only keeps the global safe.
    private static let currentProgram = Mutex("switchyard")

    /// What the command being run calls itself in usage text: `switchyard qeo realm`.
    public static var program: String { currentProgram.withLock { $0 } }

    /// Parses `arguments` with the tree under `root` and runs the command they name; returns the
    /// exit status. Help (`--help`, `help SUBCOMMAND`, a command with subcommands given none)
    /// goes to `io`'s output with status 0; a usage error goes to its error output with its
    /// usage line and status 64; a command that throws `ExitCode(n)` ends with n.
    public static func run<Root: ParsableCommand>(_ root: Root.Type, arguments: [String], io: CommandIO) -> Int32 {
        currentProgram.withLock { $0 = io.program }
        do {
            var command = try root.parseAsRoot(arguments)
            if let subcommand = command as? any PluginSubcommand {
                try subcommand.run(io: io)
            } else {
                // A command with subcommands throws its help request, as on the built-in commands.
                try command.run()
            }
            return 0
        } catch {
            let message = root.fullMessage(for: error)
            let status = root.exitCode(for: error).rawValue
            if !message.isEmpty {
                if status == 0 { io.write(message + "\n") } else { io.writeError(message + "\n") }
            }
            return status
        }
    }
}
