import ArgumentParser
import SwitchyardConfig
import SwitchyardSpool

/// `switchyard spool recover PATH`: the way out the router names when it finds its spool damaged.
struct SpoolCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spool",
        abstract: "Look after the at-least-once spool.",
        subcommands: [Recover.self]
    )

    struct Recover: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move a damaged spool (and its -wal, -shm files) aside, so the router starts with an empty one.",
            discussion: """
                The router refuses to start on a damaged spool rather than replace it: the envelopes in it were \
                accepted and must not vanish silently. This moves the files to PATH.damaged-TIME, where sqlite3's \
                .recover can still read them. It refuses while a router holds the spool.
                """)

        @Argument(help: "The spool database (default \(ConfigLoader.defaultSpoolPath)).")
        var path: String = ConfigLoader.defaultSpoolPath

        func run() throws {
            do {
                let target = try Spool.moveAside(path)
                print("moved '\(path)' to '\(target)'; the next start creates an empty spool")
            } catch {
                printError("error: \(error)")
                throw ExitCode(1)
            }
        }
    }
}
