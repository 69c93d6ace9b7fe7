import ArgumentParser
import PushTokens
import SwitchyardCore
import SwitchyardPluginCommands
import SwitchyardPluginKit

extension PushPlugin {
    /// The commands the manifest declares: `switchyard push tokens …`.
    static let commands = [
        PluginCommand(name: "tokens", summary: "List or drop the FCM tokens apps registered with a webhook (its registry: file)")
    ]

    /// Runs `switchyard push tokens list|drop …`.
    static func runCommand(_ command: String, arguments: [String], io: CommandIO) -> Int32 {
        PluginCommandRunner.run(PushTokensCommand.self, arguments: arguments, io: io)
    }
}

/// `switchyard push tokens list|drop`: the FCM tokens apps registered with a push instance's
/// webhook (`registry:` in its configuration). Works on a running router's registry too.
struct PushTokensCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: PluginCommandRunner.program,
            abstract: "List or drop registered FCM tokens.",
            subcommands: [List.self, Drop.self]
        )
    }

    struct RegistryOption: ParsableArguments {
        @Option(help: "The registry file: the push instance's `registry:` setting.")
        var registry: String

        func open(readOnly: Bool, io: CommandIO) throws -> PushTokenRegistry {
            do {
                return try PushTokenRegistry(path: registry, readOnly: readOnly)
            } catch {
                io.writeError("error: registry '\(registry)': \(error)\n")
                throw ExitCode(1)
            }
        }
    }

    struct List: PluginSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "One line per token, newest first: token, device, user, platform, registered, updated.")

        @OptionGroup var options: RegistryOption

        @Option(help: "Only this device's tokens.")
        var device: String?

        @Option(help: "Only this user's tokens.")
        var user: String?

        @Flag(help: "One JSON object per line instead of columns.")
        var json = false

        func run(io: CommandIO) throws {
            let registry = try options.open(readOnly: true, io: io)
            let records: [PushTokenRecord]
            do {
                records = try registry.records(device: device, user: user, limit: Int.max)
            } catch {
                io.writeError("error: registry '\(options.registry)': \(error)\n")
                throw ExitCode(1)
            }
            for record in records {
                let registered = PushTokensCommand.time(record.registeredAt)
                let updated = PushTokensCommand.time(record.updatedAt)
                if json {
                    var fields: [String: JSONValue] = [
                        "token": .string(record.token), "registered_at": .string(registered), "updated_at": .string(updated),
                    ]
                    if let device = record.device { fields["device"] = .string(device) }
                    if let user = record.user { fields["user"] = .string(user) }
                    if let platform = record.platform { fields["platform"] = .string(platform) }
                    io.write(JSONValue.object(fields).serialized() + "\n")
                } else {
                    let columns = [record.token, record.device ?? "-", record.user ?? "-", record.platform ?? "-", registered, updated]
                    io.write(columns.map(CommandIO.column).joined(separator: "\t") + "\n")
                }
            }
        }
    }

    struct Drop: PluginSubcommand {
        static let configuration = CommandConfiguration(abstract: "Drop tokens from the registry.")

        @OptionGroup var options: RegistryOption

        @Argument(help: "The tokens to drop.")
        var tokens: [String]

        func run(io: CommandIO) throws {
            let registry = try options.open(readOnly: false, io: io)
            var missing = 0
            for token in tokens {
                do {
                    if try registry.remove(token: token) {
                        io.write("dropped \(token)\n")
                    } else {
                        io.writeError("error: no token \(token)\n")
                        missing += 1
                    }
                } catch {
                    io.writeError("error: registry '\(options.registry)': \(error)\n")
                    throw ExitCode(1)
                }
            }
            if missing > 0 { throw ExitCode(1) }
        }
    }
}

extension PushTokensCommand {
    /// Unix seconds from the registry file as RFC 3339; a value too large for nanoseconds (a
    /// damaged file) is printed as the number instead of trapping.
    static func time(_ seconds: Int64) -> String {
        let (nanos, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? String(seconds) : Clock.rfc3339(unixNanos: nanos)
    }
}
