import ArgumentParser
import SwitchyardConfig
import SwitchyardCore
import SwitchyardSpool

/// `switchyard dlq list|show|replay|drop`: the dead letters of a spool. Works on the database of
/// a running router (SQLite in WAL mode allows it; replayed envelopes are picked up within a
/// second) as well as a stopped one's.
struct DeadLetters: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "List, show, replay or drop dead letters (deliveries given up on).",
        subcommands: [List.self, Show.self, Replay.self, Drop.self]
    )

    struct SpoolOption: ParsableArguments {
        @Option(help: "The spool database (default \(ConfigLoader.defaultSpoolPath)).")
        var spool: String = ConfigLoader.defaultSpoolPath

        func open() throws -> Spool {
            do {
                return try Spool(path: spool)
            } catch {
                printError("error: spool '\(spool)': \(error)")
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
            let moved = try options.open().replay(ids: selection.chosen)
            print("replayed \(moved)")
            try selection.check(done: moved)
        }
    }

    struct Drop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete dead letters for good.")

        @OptionGroup var options: SpoolOption
        @OptionGroup var selection: Selection

        func run() throws {
            let dropped = try options.open().drop(ids: selection.chosen)
            print("dropped \(dropped)")
            try selection.check(done: dropped)
        }
    }
}
