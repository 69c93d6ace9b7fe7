#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `switchyard [--plugins DIR] PLUGIN COMMAND ARGS…`: decides whether a command line names a
/// plugin's command, finds the plugin in the plugin directory, and runs the command with the
/// process's descriptors. The executable asks this before its own argument parser, which knows
/// only the built-in commands.
public struct PluginCommandLine: Sendable {
    /// The environment variable that names the plugin directory when `--plugins` is not given.
    public static let directoryVariable = "SWITCHYARD_PLUGINS"
    /// The plugin directory when nothing names one and the router is not installed with its
    /// plugins beside it.
    public static let defaultDirectory = "Plugins"

    /// Where an installed router's plugins are: `../lib/switchyard/plugins` from the folder of
    /// the running executable (`/usr/bin/switchyard` → `/usr/lib/switchyard/plugins`), when that
    /// folder exists.
    public static let installedDirectory: String? = {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let executable = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = executable.lastIndex(of: "/") else { return nil }
        let candidate = String(executable[..<slash]) + "/../lib/switchyard/plugins"
        var status = stat()
        guard stat(candidate, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return nil }
        return candidate
    }()
    /// The exit status of a command line that names no known plugin or command (sysexits'
    /// EX_USAGE).
    public static let usageStatus: Int32 = 64
    /// The exit status when a plugin fails to run a command it declares (EX_SOFTWARE).
    public static let softwareStatus: Int32 = 70

    /// The plugin directory: `--plugins DIR` before the plugin name, else the variable, else the
    /// installed one, else `Plugins`.
    public let directory: String
    /// The words after a leading `--plugins DIR`.
    public let words: [String]

    /// What a command line asks for.
    public enum Resolution: Sendable {
        /// Not a plugin command: the built-in argument parser takes the whole command line.
        case builtIn
        /// `switchyard --help`: the built-in help and the plugin commands of ``directory``.
        case rootHelp
        /// `switchyard PLUGIN --help`: the plugin's commands.
        case pluginHelp(LoadedPlugin)
        /// Run `command` of `plugin` with `arguments`.
        case run(LoadedPlugin, command: String, arguments: [String])
        /// A wrong command line: print the message to standard error and exit with
        /// ``usageStatus``.
        case usageError(String)
    }

    /// Reads a leading `--plugins DIR` (or `--plugins=DIR`) off `arguments` (the process
    /// arguments without the program name).
    public init(arguments: [String], environment: [String: String]) {
        var words = arguments[...]
        var directory: String?
        if let first = words.first {
            if first == "--plugins", words.count >= 2 {
                directory = words.dropFirst().first
                words = words.dropFirst(2)
            } else if first.hasPrefix("--plugins=") {
                directory = String(first.dropFirst("--plugins=".count))
                words = words.dropFirst()
            }
        }
        self.directory = Self.directory(option: directory, environment: environment)
        self.words = Array(words)
    }

    /// The plugin directory every command uses: `option` (`--plugins`), else the variable
    /// ``directoryVariable``, else `configured` (a route file's `plugins.dir`), else the
    /// installed one beside the executable (``installedDirectory``), else ``defaultDirectory``.
    public static func directory(
        option: String?, environment: [String: String], configured: String? = nil, installed: String? = installedDirectory
    ) -> String {
        option ?? environment[directoryVariable].flatMap { $0.isEmpty ? nil : $0 } ?? configured ?? installed ?? defaultDirectory
    }

    /// Decides what the command line asks for. `builtInCommands` are the executable's own
    /// subcommand names; `isPath` says whether a word names an existing file or directory (a
    /// route file for the default `run` command).
    public func resolve(builtInCommands: Set<String>, isPath: (String) -> Bool = Self.exists) -> Resolution {
        guard let first = words.first else { return .builtIn }
        if Self.isHelp(first) {
            guard words.count >= 2 else { return .rootHelp }
            if first == "help", Self.isPluginName(words[1]), !builtInCommands.contains(words[1]),
                let plugin = plugin(named: words[1], isPath: isPath)
            {
                return .pluginHelp(plugin)
            }
            return .builtIn
        }
        guard !first.hasPrefix("-"), !builtInCommands.contains(first), Self.isPluginName(first) else { return .builtIn }
        guard let plugin = plugin(named: first, isPath: isPath) else {
            if isPath(first) { return .builtIn }
            return .usageError(
                "error: '\(first)' is neither a switchyard command nor a plugin in \(directory)\(refusalNote(for: first))\n"
                    + "Run 'switchyard --help' for the commands, and the plugin commands it finds in \(directory).")
        }
        guard !plugin.manifest.commands.isEmpty else {
            return .usageError("error: plugin '\(plugin.manifest.name)' (\(plugin.path)) declares no commands")
        }
        guard words.count >= 2 else {
            return .usageError("error: give a command of plugin '\(plugin.manifest.name)'\n" + Self.help(for: plugin))
        }
        let command = words[1]
        if Self.isHelp(command) { return .pluginHelp(plugin) }
        guard plugin.command(named: command) != nil else {
            let known = plugin.manifest.commands.map(\.name).joined(separator: ", ")
            return .usageError(
                "error: plugin '\(plugin.manifest.name)' has no command '\(Self.printable(command))' (its commands: \(known))\n"
                    + "Run 'switchyard \(plugin.manifest.name) --help' for what they do.")
        }
        return .run(plugin, command: command, arguments: Array(words.dropFirst(2)))
    }

    /// Runs `command` of `plugin` with the process's standard descriptors and returns the exit
    /// status to end with: the command's own (0…255), or ``softwareStatus`` with a message on
    /// standard error when the plugin cannot run it or returns a status no process can exit with.
    public static func run(
        _ plugin: LoadedPlugin, command: String, arguments: [String], descriptors: CommandDescriptors = .standard
    ) -> Int32 {
        let program = "switchyard \(plugin.manifest.name) \(command)"
        do {
            let status = try plugin.runCommand(command, arguments: arguments, program: program, descriptors: descriptors)
            guard (0...255).contains(status) else {
                // exit() keeps only the low byte: 256 would read as success.
                writeAll("error: \(program) returned exit status \(status), outside 0-255\n", to: descriptors.error)
                return softwareStatus
            }
            return status
        } catch {
            writeAll("error: \(error)\n", to: descriptors.error)
            return softwareStatus
        }
    }

    /// `switchyard PLUGIN --help`: the plugin's commands with their summaries.
    public static func help(for plugin: LoadedPlugin) -> String {
        let name = plugin.manifest.name
        var text = "USAGE: switchyard \(name) <command> [<arguments> ...]\n"
        if !plugin.manifest.summary.isEmpty { text += "\n\(printable(plugin.manifest.summary))\n" }
        text += "\nCOMMANDS:\n"
        text += table(plugin.manifest.commands.map { ($0.name, $0.summary) })
        text += "\n  See 'switchyard \(name) <command> --help' for a command's options.\n"
        return text
    }

    /// The section `switchyard --help` adds for the plugins of ``directory``: one line per
    /// plugin command, or how to point it at the plugins when it finds none.
    public func pluginCommandsSection() -> String {
        let (plugins, errors) = PluginLoader.loadDirectory(directory)
        let rows = plugins.flatMap { plugin in
            plugin.manifest.commands.map { ("\(plugin.manifest.name) \($0.name)", $0.summary) }
        }
        var text = "PLUGIN COMMANDS (switchyard [--plugins <dir>] <plugin> <command> ...; plugins from \(directory)):\n"
        if rows.isEmpty {
            text += "  none found; name the plugin directory with --plugins <dir> or \(Self.directoryVariable)\n"
        } else {
            text += Self.table(rows)
        }
        for error in errors { text += "  (\(Self.printable(error.description)))\n" }
        text += "\n  See 'switchyard <plugin> --help' for a plugin's commands.\n"
        return text
    }

    /// The plugin whose manifest name is `name`: `lib<name>.so` first, which is the usual file,
    /// then every plugin of the directory (a file may carry another name). A word that is a
    /// path (a route directory for `run`) is not worth loading every plugin for.
    func plugin(named name: String, isPath: (String) -> Bool) -> LoadedPlugin? {
        let file = directory + "/lib\(name).so"
        if Self.exists(file), let plugin = try? PluginLoader.load(file: file), plugin.manifest.name == name { return plugin }
        if isPath(name) { return nil }
        return PluginLoader.loadDirectory(directory).plugins.first { $0.manifest.name == name }
    }

    /// Why `lib<name>.so` was refused, when it was: a plugin that exists but fails to load
    /// should not read as a missing one.
    func refusalNote(for name: String) -> String {
        let file = directory + "/lib\(name).so"
        guard Self.exists(file) else { return "" }
        do {
            _ = try PluginLoader.load(file: file)
            return ""
        } catch {
            return " (\(Self.printable(error.description)))"
        }
    }

    static func isHelp(_ word: String) -> Bool { word == "--help" || word == "-h" || word == "help" }

    /// Whether `word` can be a plugin name: letters, digits, `-` and `_`. A word with a dot or a
    /// slash (`routes.yaml`, `./Routes`) stays a route path for the default `run` command.
    static func isPluginName(_ word: String) -> Bool {
        !word.isEmpty && word.count <= 64
            && word.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" || $0 == "_"
            }
    }

    /// Whether `path` exists (a file or a directory).
    public static func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// Two aligned columns.
    static func table(_ rows: [(String, String)]) -> String {
        let width = min(28, rows.map(\.0.count).max() ?? 0)
        return rows.map { name, summary in
            let padding = String(repeating: " ", count: max(1, width - name.count + 2))
            return "  \(printable(name))\(padding)\(printable(summary))\n"
        }.joined()
    }

    /// `text` with control characters (a terminal's escape sequences) replaced by spaces: a
    /// manifest is the plugin's word, not the operator's.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
    }

    static func writeAll(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { buffer in write(descriptor, buffer.baseAddress, buffer.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
