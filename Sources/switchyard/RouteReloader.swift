import ArgumentParser
import Foundation
import Logging
import SwitchyardAdmin
import SwitchyardAdminClient
import SwitchyardConfig
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardRuntime
import SwitchyardSpool
import Synchronization

/// Re-reads the route files and applies them to the running router: what SIGHUP, `run --watch`
/// and the admin port's `POST /reload` do. One reload at a time.
final class RouteReloader: Sendable {
    /// The spool a reload opened, and whether it is the router's (attached). Its lock also
    /// serialises reloads.
    private struct OpenedSpool {
        var spool: Spool?
        var attached: Bool
    }

    private let opened: Locked<OpenedSpool>
    private let options: GraphOptions
    private let spoolPath: String?
    private let router: Router
    /// The router's iiideas: the shared store's catalog is read through them.
    private let iiideas: RouterIiideas
    private let logger: Logger
    private let drainTimeout: Duration

    /// The `tracing:` the process started with: a reload cannot change it.
    private let startedTracing: TracingSettings?
    /// The `store.url` the process started with: a reload cannot change it either.
    private let startedStoreURL: String?
    /// ``reloadSoon()``'s requests: one wanted, and whether its thread runs.
    private let soon = Mutex<(wanted: Bool, running: Bool)>((false, false))

    init(
        options: GraphOptions, spoolPath: String?, spool: Spool?, router: Router, iiideas: RouterIiideas, logger: Logger,
        drainTimeout: Duration,
        startedTracing: TracingSettings?, startedStoreURL: String?
    ) {
        self.startedTracing = startedTracing
        self.startedStoreURL = startedStoreURL
        self.options = options
        self.spoolPath = spoolPath
        opened = Locked(OpenedSpool(spool: spool, attached: spool != nil))
        self.router = router
        self.iiideas = iiideas
        self.logger = logger
        self.drainTimeout = drainTimeout
    }

    /// Validates the route files and, when they are valid, swaps the running graph for theirs
    /// (see ``Router/reload(to:drainTimeout:)``). Invalid files change nothing; the summary
    /// then carries their problems.
    @Sendable func reload() -> Router.ReloadSummary {
        opened.withLock { reloadLocked(&$0) }
    }

    /// ``reload()`` on a thread of its own, for a change made to the shared store's iiideas
    /// (by another router, or this one: its own notice comes back too). Requests that come while one waits or runs are one more
    /// reload, not one each: the last reload begins after the last request.
    func reloadSoon() {
        let start = soon.withLock { state -> Bool in
            state.wanted = true
            guard !state.running else { return false }
            state.running = true
            return true
        }
        guard start else { return }
        Thread.detachNewThread {
            while self.soon.withLock({ state -> Bool in
                state.running = state.wanted
                state.wanted = false
                return state.running
            }) {
                _ = self.reload()
            }
        }
    }

    /// ``reload()`` unless one is already running (then nil): an admin request does not queue
    /// behind another, so requests cannot pile up threads.
    @Sendable func reloadUnlessBusy() -> Router.ReloadSummary? {
        opened.withLockIfAvailable { reloadLocked(&$0) }
    }

    private func reloadLocked(_ opened: inout OpenedSpool) -> Router.ReloadSummary {
        // A local copy: the store closure below escapes (formally), so it cannot capture `opened`.
        var spool = opened.spool
        defer { opened.spool = spool }
        logger.notice("reloading routes", metadata: ["routes": .string(options.routes)])
        var problems: [String] = []
        var skipped: [String: String] = [:]
        var storeFailure: String?
        var storeURL: String?
        let plan = options.loadPlan(
            logger: logger, reportingProblemsTo: { problems.append($0) },
            store: { config in
                storeURL = config.storeURL?.value
                guard config.wantsStore else { return self.iiideas.catalogStore ?? spool?.store }
                if spool == nil {
                    do {
                        spool = try self.openSpool(configured: config.spoolPath?.value, sync: config.spoolSync?.value ?? .full)
                    } catch {
                        storeFailure = "\(error)"
                    }
                }
                // The shared store's obtained iiideas, when there is one.
                return self.iiideas.catalogStore ?? spool?.store
            },
            skipped: { skipped[$0] = $1 }, reloading: true)
        guard let plan else {
            logger.error("reload rejected: the route files have the errors listed above; the running graph is unchanged")
            return .rejected("the route files have errors: " + problems.joined(separator: "; "))
        }
        if plan.needsSpool, spool == nil {
            do {
                spool = try openSpool(configured: plan.spoolPath, sync: plan.spoolSync)
            } catch {
                storeFailure = "\(error)"
            }
        }
        if let storeFailure {
            logger.error("reload rejected: \(storeFailure); the running graph is unchanged")
            return .rejected(storeFailure)
        }
        if let spool, !opened.attached {
            router.attach(spool: spool)
            opened.attached = true
        }
        if plan.tracing != startedTracing {
            // The tracer is wired into the router and every instance at start.
            logger.warning("reload: the tracing settings changed; they take effect at the next start (tracing is unchanged)")
        }
        if storeURL != startedStoreURL {
            // The shared store is opened, migrated and watched once, at start.
            logger.warning("reload: store.url changed; it takes effect at the next start (the store in use is unchanged)")
        }
        var summary = router.reload(to: plan, drainTimeout: drainTimeout)
        summary.skippedIiideas = skipped
        return summary
    }

    private func openSpool(configured: String?, sync: SpoolSync) throws -> Spool {
        let path = spoolPath ?? configured ?? ConfigLoader.defaultSpoolPath
        do {
            return try Spool(path: path, sync: sync, owner: true)
        } catch {
            throw ReloadFailure(description: "spool '\(path)': \(error)")
        }
    }
}

/// The store could not be opened for a reload.
private struct ReloadFailure: Error, CustomStringConvertible {
    var description: String
}

/// `switchyard reload --admin URL`: asks a running router to re-read its route files (as
/// SIGHUP does) and prints what the reload did.
struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reload a running router's route files through its admin port and print the summary.",
        discussion: """
            Exits 0 when the new routes run, 1 when the reload was rejected (the route files have \
            errors; nothing changed) or rolled back (an instance failed; the previous routes run \
            again), 2 when the admin port could not be reached.
            """
    )

    @Option(help: "The router's admin address: http://host:port or host:port.")
    var admin: String

    @Option(help: "The admin bearer token (default: SWITCHYARD_ADMIN_TOKEN).")
    var token: String?

    @Flag(help: "Print the summary as the admin port's JSON instead of lines of text.")
    var json = false

    func run() throws {
        let answer: AdminClient.Answer
        do {
            let client = try AdminClient(address: admin, token: AdminClient.token(option: token, environment: ProcessEnvironment.current))
            answer = try client.post("/reload")
        } catch {
            printError("error: \(error)")
            throw ExitCode(2)
        }
        guard let summary = try? JSONValue(parsing: answer.body), summary["outcome"]?.stringValue != nil else {
            printError("error: the admin port answered \(answer.status): \(String(decoding: answer.body.prefix(500), as: UTF8.self))")
            throw ExitCode(answer.status == 401 || answer.status == 403 || answer.status == 421 ? 2 : 1)
        }
        if json {
            print(summary.serialized())
        } else {
            print(Self.text(of: summary))
        }
        if !(200..<300).contains(answer.status) || summary["outcome"]?.stringValue != "applied" { throw ExitCode(1) }
    }

    /// The summary as lines: the outcome (and why), then each list that is not empty.
    static func text(of summary: JSONValue) -> String {
        var lines = ["reload " + (summary["outcome"]?.stringValue ?? "?").replacingOccurrences(of: "_", with: " ")]
        if let reason = summary["reason"]?.stringValue { lines[0] += ": " + reason }
        for section in ["instances", "routes"] {
            for (name, names) in (summary[section]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                let list = names.arrayValue?.compactMap(\.stringValue) ?? []
                if !list.isEmpty { lines.append("\(section) \(name): \(list.joined(separator: ", "))") }
            }
        }
        return lines.joined(separator: "\n")
    }
}
