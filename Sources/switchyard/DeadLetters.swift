import ArgumentParser
import Logging
import SwitchyardConfig
import SwitchyardCore
import SwitchyardPostgres
import SwitchyardSpool
import SwitchyardStore

/// `switchyard dlq list|show|replay|drop`: the dead letters of a spool, or with `--url` of every
/// router sharing a PostgreSQL store. Works on the database of a running router (SQLite in WAL
/// mode allows it; replayed envelopes are picked up within a second) as well as a stopped one's.
struct DeadLetters: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "List, show, replay or drop dead letters (deliveries given up on).",
        subcommands: [List.self, Show.self, Replay.self, Drop.self]
    )

    struct SpoolOption: ParsableArguments {
        @OptionGroup var location: SpoolLocation

        @Option(
            help:
                "The PostgreSQL store routers share, postgres://… without a password (SWITCHYARD_STORE_URL may hold one): the dead letters of every router, replayed into --spool."
        )
        var url: String?

        /// The spool's dead letters, or with a shared store every router's (those a router has
        /// handed over: it does so within seconds of writing them). The command never changes
        /// the store's schema: a router does, or `switchyard store migrate`.
        func open() throws -> any DeadLetterStore {
            let path = try location.existing()
            let spool: Spool
            do {
                spool = try Spool(path: path)
            } catch {
                printError("error: spool '\(path)': \(error)")
                throw ExitCode(1)
            }
            // A command line is visible to every user (ps) and kept in shell histories.
            if let url, (try? PostgresAddress(parsing: url))?.password != nil {
                printError("error: --url must not carry a password; put the URL in SWITCHYARD_STORE_URL instead")
                throw ExitCode(2)
            }
            guard let url = url ?? ProcessEnvironment.current["SWITCHYARD_STORE_URL"] else { return spool }
            do {
                let store = try PostgresStore(address: PostgresAddress(parsing: url), logger: Logger(label: "switchyard.store"))
                let status = try store.migrationStatus()
                guard status.isCurrent else {
                    printError("error: \(status.summary(location: store.location)); run 'switchyard store migrate' or start a router")
                    throw ExitCode(1)
                }
                return SharedDeadLetters(shared: store, spool: spool)
            } catch {
                printError("error: \(error)")
                throw ExitCode(1)
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One line per dead letter: id, route, sink, attempts, time, envelope, error.")

        @OptionGroup var options: SpoolOption

        @Option(help: "Only this route's dead letters.")
        var route: String?

        @Flag(help: "One JSON object per line instead of columns.")
        var json = false

        func run() throws {
            let letters = try options.open().deadLetters(route: route, limit: Int.max)
            for letter in letters {
                if json {
                    print(letter.json(withEnvelope: false).serialized())
                } else {
                    let columns = [
                        String(letter.id), letter.route, letter.sink, "attempts=\(letter.attempts)",
                        Clock.rfc3339(unixNanos: letter.failedAt),
                        letter.envelopeID, letter.type, letter.subject.isEmpty ? "-" : letter.subject, letter.error,
                    ]
                    print(columns.joined(separator: "\t"))
                }
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A dead letter with its whole envelope, as JSON.")

        @OptionGroup var options: SpoolOption

        @Argument(help: "The dead letter's id (from dlq list).")
        var id: Int64

        func run() throws {
            guard let letter = try options.open().deadLetter(id: id) else {
                printError("error: no dead letter \(id)")
                throw ExitCode(1)
            }
            print(letter.json(withEnvelope: true).serialized())
        }
    }

    /// Dead letter ids, or `--all`.
    struct Selection: ParsableArguments {
        @Argument(help: "Dead letter ids.")
        var ids: [Int64] = []

        @Flag(help: "Every dead letter.")
        var all = false

        func validate() throws {
            if all == !ids.isEmpty { throw ValidationError("name dead letter ids or --all") }
        }

        /// The ids for the spool: `nil` means all.
        var chosen: [Int64]? { all ? nil : ids }

        /// Fails the command when fewer than the named ids were found.
        func check(done count: Int) throws {
            if !all, count < ids.count { throw ExitCode(1) }
        }
    }

    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Move dead letters back to their route's spool; the sink gets them again (a running router within a second, else on start)."
        )

        @OptionGroup var options: SpoolOption
        @OptionGroup var selection: Selection

        func run() throws {
            let moved = try options.open().replayDeadLetters(ids: selection.chosen)
            print("replayed \(moved)")
            try selection.check(done: moved)
        }
    }

    struct Drop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete dead letters for good.")

        @OptionGroup var options: SpoolOption
        @OptionGroup var selection: Selection

        func run() throws {
            let dropped = try options.open().dropDeadLetters(ids: selection.chosen)
            print("dropped \(dropped)")
            try selection.check(done: dropped)
        }
    }
}
