import ArgumentParser
import Logging
import SwitchyardConfig
import SwitchyardPostgres
import SwitchyardSQLiteStore
import SwitchyardSpool
import SwitchyardStore

/// `switchyard store check|migrate`: the schema versions of the router's stores — the SQLite
/// spool database and, with `store.url`, the PostgreSQL database routers share.
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Check or migrate the schema of the router's stores.",
        discussion: """
            A router applies pending migrations itself when it starts; these commands let an operator see \
            what a new version would change (check) and apply it ahead of a rolling restart (migrate). The \
            stores are the ones the route files name (spool.path, store.url), or --spool and --url.
            """,
        subcommands: [Check.self, Migrate.self]
    )

    /// Which stores a command works on.
    struct Stores: ParsableArguments {
        @Argument(help: "A route file, or a directory whose *.yaml files are merged (for spool.path and store.url).")
        var routes: String = "Routes"

        @Option(help: "The SQLite store (overrides spool.path; default \(ConfigLoader.defaultSpoolPath)).")
        var spool: String?

        @Option(help: "The PostgreSQL store, postgres://… without a password (overrides store.url; SWITCHYARD_STORE_URL may hold one).")
        var url: String?

        /// The spool path and the PostgreSQL URL, if any; route file problems are printed.
        func resolve() throws -> (spool: String, url: String?) {
            let environment = ProcessEnvironment.current
            // A command line is visible to every user (ps) and kept in shell histories.
            if let url, (try? PostgresAddress(parsing: url))?.password != nil {
                printError("error: --url must not carry a password; put the URL in SWITCHYARD_STORE_URL instead")
                throw ExitCode(2)
            }
            let (config, problems) = ConfigLoader(environment: environment).load(path: routes)
            let named = problems.filter { $0.message.contains("store.url") || $0.message.contains("spool") }
            for problem in named { printError(problem.description) }
            guard named.isEmpty else { throw ExitCode(1) }
            return (
                spool ?? config.spoolPath?.value ?? ConfigLoader.defaultSpoolPath,
                url ?? environment["SWITCHYARD_STORE_URL"] ?? config.storeURL?.value
            )
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print each store's schema version and pending migrations; exit 1 unless all are up to date.")

        @OptionGroup var stores: Stores

        func run() throws {
            let (spool, url) = try stores.resolve()
            var current = true
            do {
                let status = try SQLiteSchema.migrationStatus(at: spool)
                print(status.summary(location: "spool \(spool)"))
                current = current && status.isCurrent
            } catch {
                printError("error: \(error)")
                current = false
            }
            if let url {
                do {
                    let store = try PostgresStore(address: PostgresAddress(parsing: url), logger: Logger(label: "switchyard.store"))
                    let status = try store.migrationStatus()
                    print(status.summary(location: "store \(store.location)"))
                    current = current && status.isCurrent
                } catch {
                    printError("error: \(error)")
                    current = false
                }
            }
            if !current { throw ExitCode(1) }
        }
    }

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply each store's pending migrations (as a router does when it starts).")

        @OptionGroup var stores: Stores

        func run() throws {
            let (spool, url) = try stores.resolve()
            do {
                let before = try SQLiteSchema.migrate(at: spool)
                print("spool \(spool): " + (before.pending.isEmpty ? "up to date" : "applied \(Self.list(before.pending))"))
                if let url {
                    let store = try PostgresStore(address: PostgresAddress(parsing: url), logger: Logger(label: "switchyard.store"))
                    let pending = try store.migrate().pending
                    print("store \(store.location): " + (pending.isEmpty ? "up to date" : "applied \(Self.list(pending))"))
                }
            } catch {
                printError("error: \(error)")
                throw ExitCode(1)
            }
        }

        static func list(_ versions: [Int]) -> String { "migration(s) " + versions.map(String.init).joined(separator: ", ") }
    }
}
