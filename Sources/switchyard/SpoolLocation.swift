import ArgumentParser
import Foundation
import SwitchyardConfig

/// Which spool a `dlq` or `spool` command works on: `--spool`, else the `spool.path` of the route
/// files (`--routes`, else `Routes` when that folder exists), else the default — the same spool
/// `run` opens. Commands that read or move a spool never create one.
struct SpoolLocation: ParsableArguments {
    @Option(help: "A route file, or a directory whose *.yaml files are merged, for spool.path (default Routes, when it exists).")
    var routes: String?

    @Option(help: "The spool database (overrides spool.path; default \(ConfigLoader.defaultSpoolPath)).")
    var spool: String?

    /// The spool's path, and where it came from (for messages).
    func resolve() throws -> (path: String, origin: String) {
        if let spool { return (spool, "--spool") }
        let folder = routes ?? "Routes"
        guard routes != nil || FileManager.default.fileExists(atPath: folder) else {
            return (ConfigLoader.defaultSpoolPath, "the default")
        }
        let (config, problems) = ConfigLoader(environment: ProcessEnvironment.current).load(path: folder)
        // Problems elsewhere in the files are run's and validate's to report; not finding the
        // files, or their spool setting, is this command's.
        let named = config.files.isEmpty ? problems : problems.filter { $0.message.contains("spool") }
        for problem in named { printError(problem.description) }
        guard named.isEmpty else { throw ExitCode(1) }
        guard let configured = config.spoolPath else {
            return (ConfigLoader.defaultSpoolPath, "the default (\(folder) sets no spool.path)")
        }
        return (configured.value, "spool.path at \(configured.location)")
    }

    /// The path of a spool that exists; a missing one is refused with where the path came from,
    /// and nothing is created.
    func existing() throws -> String {
        let (path, origin) = try resolve()
        guard FileManager.default.fileExists(atPath: path) else {
            printError(
                "error: there is no spool at '\(path)' (from \(origin)); a router creates it when a route needs one. Name another with --spool or --routes"
            )
            throw ExitCode(1)
        }
        return path
    }
}
