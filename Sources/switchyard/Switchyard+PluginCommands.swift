import ArgumentParser
import SwitchyardRuntime

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension Switchyard {
    /// Routes `switchyard [--plugins DIR] PLUGIN COMMAND ARGS…` to the plugin before the argument
    /// parser sees the command line: the parser knows only the built-in commands, the plugins
    /// bring theirs at run time. `switchyard --help` adds the plugin commands it finds.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let commandLine = PluginCommandLine(arguments: arguments, environment: ProcessEnvironment.current)
        let builtIns = Set(configuration.subcommands.map { $0._commandName })
        switch commandLine.resolve(builtInCommands: builtIns) {
        case .builtIn:
            await main(arguments)
        case .rootHelp:
            print(helpMessage() + "\n\n" + commandLine.pluginCommandsSection(), terminator: "")
            exitProcess(0)
        case .pluginHelp(let plugin):
            print(PluginCommandLine.help(for: plugin), terminator: "")
            exitProcess(0)
        case .run(let plugin, let command, let arguments):
            exitProcess(PluginCommandLine.run(plugin, command: command, arguments: arguments))
        case .usageError(let message):
            printError(message)
            exitProcess(PluginCommandLine.usageStatus)
        }
    }
}

/// Ends the process (stdio flushed), as `exit(3)`; ParsableCommand's own `exit` is a different
/// function.
private func exitProcess(_ status: Int32) -> Never {
    #if canImport(Glibc)
        Glibc.exit(status)
    #else
        Musl.exit(status)
    #endif
}
