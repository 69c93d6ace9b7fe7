import Foundation
import Logging
import ServiceLifecycle
import SwitchyardAdmin
import SwitchyardRuntime
import Synchronization
import UnixSignals

// `switchyard run` is one ServiceGroup: it owns the start of every part, the signals, and the
// graceful shutdown. The group shuts its services down in reverse order: the SIGHUP listener
// first, then the router drains, and the admin port last, so /metrics and /readyz answer while
// the router drains.

/// The router: already started when the group runs (a failed start ends `run` with status 1
/// before any service exists); drained and stopped on graceful shutdown.
final class RouterService: Service {
    let router: Router
    let drainTimeout: Duration
    let logger: Logger
    /// Envelopes still outstanding and not spooled when the drain gave up (exit status 3).
    let lost = Atomic<Int>(0)

    init(router: Router, drainTimeout: Duration, logger: Logger) {
        self.router = router
        self.drainTimeout = drainTimeout
        self.logger = logger
    }

    func run() async {
        // Returns on graceful shutdown, throws on cancellation: either way the router drains.
        try? await gracefulShutdown()
        let router = router
        let drainTimeout = drainTimeout
        let left = await onOwnThread(named: "router drain") { router.shutdown(drainTimeout: drainTimeout) }
        lost.store(left, ordering: .relaxed)
        for route in router.statistics.routes {
            var metadata: Logger.Metadata = ["route": .string(route.name)]
            for (name, value) in route.namedCounters { metadata[name] = .stringConvertible(value) }
            logger.info("route totals", metadata: metadata)
        }
    }
}

/// The admin HTTP port: already listening when the group runs; stopped last.
struct AdminService: Service {
    let server: AdminServer

    func run() async {
        try? await gracefulShutdown()
        let server = server
        await onOwnThread(named: "admin stop") { server.stop() }
    }
}

/// The process's signals: SIGHUP (and `run --watch`, which raises it) reloads the route files,
/// which systemd hears about (``SystemdNotification``); SIGINT or SIGTERM ends this service, which the group takes as the start of its graceful
/// shutdown (it is configured with `.gracefullyShutdownGroup`).
struct ProcessSignals: Service {
    /// Trapped before anything starts: SIGHUP's default action would end the process.
    let signals: UnixSignalsSequence
    let reloader: RouteReloader
    let logger: Logger

    func run() async {
        for await signal in signals.cancelOnGracefulShutdown() {
            guard signal == .sighup else {
                SystemdNotification.send("STOPPING=1", "STATUS=draining")
                logger.info(
                    "shutting down (a second SIGINT or SIGTERM stops at once)",
                    metadata: ["signal": .string(signal == .sigint ? "SIGINT" : "SIGTERM")])
                SecondSignal.exitsAtOnce(logger: logger)
                return
            }
            let reloader = reloader
            // systemd (`ExecReload=` sends SIGHUP) hears when the reload begins and ends.
            SystemdNotification.send("RELOADING=1", SystemdNotification.monotonicNow)
            let summary = await onOwnThread(named: "reload") { reloader.reload() }
            SystemdNotification.send("READY=1", "STATUS=reload \(summary.outcome.rawValue)")
        }
    }
}

/// `run --exit-when-done`: ends when every source the routes read is done and the router has
/// drained, which starts the group's graceful shutdown as SIGTERM would.
struct SourcesFinished: Service {
    let router: Router

    func run() async {
        let router = router
        let finished = AsyncStream<Void> { continuation in
            router.whenSourcesFinish { continuation.finish() }
        }
        for await _ in finished.cancelOnGracefulShutdown() {}
    }
}

/// After the first SIGINT or SIGTERM, a second one ends the process at once, with status
/// 128 + the signal's number (130, 143) as a shell reports a process the signal ended. What
/// was spooled stays in the spool (SQLite's journal makes a sudden end safe) and is delivered
/// at the next start; what was queued and not spooled is lost, as the log line says.
enum SecondSignal {
    /// The signal sources, kept for the life of the process.
    private static let sources = Mutex<[any DispatchSourceSignal]>([])

    static func exitsAtOnce(logger: Logger) {
        sources.withLock { sources in
            guard sources.isEmpty else { return }
            sources = SignalExit.install(logger: logger) { name in
                "second \(name) during the drain: stopping at once; spooled envelopes are delivered at the next start, queued ones that were not spooled are lost"
            }
        }
    }
}

/// SIGINT or SIGTERM ending the process at once, with status 128 + the signal (130, 143) and
/// a warning saying why. The signals are already trapped (UnixSignals ignores their default
/// action), so these sources hear them alongside the group's.
enum SignalExit {
    /// Installs the sources; `message` gets the signal's name. Cancel them to stop.
    static func install(logger: Logger, message: @escaping @Sendable (String) -> String) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                logger.warning(
                    "\(message(number == SIGINT ? "SIGINT" : "SIGTERM"))", metadata: ["exit": .stringConvertible(128 + number)])
                exit(128 + number)
            }
            source.resume()
            return source
        }
    }
}
