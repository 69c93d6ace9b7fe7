import ArgumentParser
import PushTokens
import SwitchyardCore

/// `switchyard push tokens list|drop`: the FCM tokens apps registered with a push instance's
/// webhook (`registry:` in its configuration). Works on a running router's registry too.
struct Push: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The push plugin's FCM token registry.",
        subcommands: [Tokens.self]
    )

    struct Tokens: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List or drop registered FCM tokens.",
            subcommands: [List.self, Drop.self]
        )
    }

    struct RegistryOption: ParsableArguments {
        @Option(help: "The registry file: the push instance's `registry:` setting.")
        var registry: String

        func open(readOnly: Bool) throws -> PushTokenRegistry {
            do {
                return try PushTokenRegistry(path: registry, readOnly: readOnly)
            } catch {
                printError("error: registry '\(registry)': \(error)")
                throw ExitCode(1)
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One line per token, newest first: token, device, user, platform, registered, updated.")

        @OptionGroup var options: RegistryOption

        @Option(help: "Only this device's tokens.")
        var device: String?

        @Option(help: "Only this user's tokens.")
        var user: String?

        @Flag(help: "One JSON object per line instead of columns.")
        var json = false

        func run() throws {
            let records: [PushTokenRecord]
            do {
                records = try options.open(readOnly: true).records(device: device, user: user, limit: Int.max)
            } catch {
                printError("error: registry '\(options.registry)': \(error)")
                throw ExitCode(1)
            }
            for record in records {
                let registered = Clock.rfc3339(unixNanos: record.registeredAt * 1_000_000_000)
                let updated = Clock.rfc3339(unixNanos: record.updatedAt * 1_000_000_000)
                if json {
                    var fields: [String: JSONValue] = [
                        "token": .string(record.token), "registered_at": .string(registered), "updated_at": .string(updated),
                    ]
                    if let device = record.device { fields["device"] = .string(device) }
                    if let user = record.user { fields["user"] = .string(user) }
                    if let platform = record.platform { fields["platform"] = .string(platform) }
                    print(JSONValue.object(fields).serialized())
                } else {
                    print(
                        [record.token, record.device ?? "-", record.user ?? "-", record.platform ?? "-", registered, updated].joined(
                            separator: "\t"))
                }
            }
        }
    }

    struct Drop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drop tokens from the registry.")

        @OptionGroup var options: RegistryOption

        @Argument(help: "The tokens to drop.")
        var tokens: [String]

        func run() throws {
            let registry = try options.open(readOnly: false)
            var missing = 0
            for token in tokens {
                do {
                    if try registry.remove(token: token) {
                        print("dropped \(token)")
                    } else {
                        printError("error: no token \(token)")
                        missing += 1
                    }
                } catch {
                    printError("error: registry '\(options.registry)': \(error)")
                    throw ExitCode(1)
                }
            }
            if missing > 0 { throw ExitCode(1) }
        }
    }
}
