import ArgumentParser
import Foundation
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
                .recover can still read them. It refuses while a router holds the spool, when there is no spool, \
                and when the spool is sound (its integrity check passes: the router delivers what it holds at its \
                next start) unless --force.
                """)

        @Argument(help: "The spool database (default: --spool, else the route files' spool.path, else \(ConfigLoader.defaultSpoolPath)).")
        var file: String?

        @OptionGroup var location: SpoolLocation

        @Flag(help: "Move the spool aside even when its integrity check passes.")
        var force = false

        func run() throws {
            let path = try file ?? location.resolve().path
            if !force, FileManager.default.fileExists(atPath: path), Spool.damage(at: path) == nil {
                printError(
                    "error: spool '\(path)' is not damaged (its integrity check passes); the router delivers what it holds at its next start. Use --force to move it aside anyway"
                )
                throw ExitCode(1)
            }
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
