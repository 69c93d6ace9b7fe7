import Foundation
import Hummingbird
import HummingbirdCore
public import Logging
import Metrics
import NIOCore
public import Prometheus
import ServiceLifecycle
public import SwitchyardAdminClient
import SwitchyardConnectionGuard
import SwitchyardCore
public import SwitchyardIiideas
public import SwitchyardRuntime
public import SwitchyardSpool
import Synchronization

/// The admin HTTP port of a running router (Hummingbird): `/healthz`, `/readyz`, `/metrics`
/// in Prometheus format, and the JSON API under `/v1` that the CLI and operators use.
///
/// Every path but `/healthz` needs `Authorization: Bearer <token>` when a token is set.
public final class AdminServer: Sendable {
    /// Where to listen and who may ask.
    public struct Configuration: Sendable {
        /// The address to bind: loopback unless the operator says otherwise.
        public var host: String
        /// The port; 0 picks a free one (logged once bound).
        public var port: Int
        /// The bearer token, if requests must carry one.
        public var token: String?
        /// Host names, besides IP literals and `localhost`, that a request's `Host` header may
        /// name (`admin.allowed_hosts`).
        public var allowedHosts: [String]
        /// Connections open at once (at the cap a slow or idle one makes room), and from one
        /// address; the time a request head may take (`admin.max_connections`, …).
        public private(set) var maximumConnections = 64
        public private(set) var maximumPerPeer = 16
        public private(set) var headerTimeout: Duration = .seconds(10)

        /// Sets the connection guard's limits that are given; the per-address cap follows the
        /// connection cap (a quarter of it) unless it is given too.
        public mutating func limitConnections(_ maximum: Int?, perPeer: Int?, headerTimeout: Duration?) {
            if let maximum {
                maximumConnections = maximum
                maximumPerPeer = max(1, maximum / 4)
            }
            if let perPeer { maximumPerPeer = perPeer }
            if let headerTimeout { self.headerTimeout = headerTimeout }
        }

        /// Creates a configuration.
        public init(host: String = "127.0.0.1", port: Int = 9180, token: String? = nil, allowedHosts: [String] = []) {
            self.host = host
            self.port = port
            self.token = token
            self.allowedHosts = allowedHosts
        }

        /// Whether the bound address is reachable from this machine only.
        public var isLoopback: Bool { AdminHost.isLoopback(host) }

        /// Refuses what would serve the admin API to the network without a token.
        public func validate() throws(AdminError) {
            if !isLoopback, (token ?? "").isEmpty {
                throw AdminError(
                    description:
                        "the admin port would listen on \(host):\(port), which is not loopback, without a token: "
                        + "set admin.token (or SWITCHYARD_ADMIN_TOKEN), or listen on 127.0.0.1")
            }
        }

        /// Parses `host:port`, `:port` or `port`.
        public init?(address: String, token: String? = nil, allowedHosts: [String] = []) {
            guard let parsed = AdminAddress(address) else { return nil }
            self.init(host: parsed.host, port: parsed.port, token: token, allowedHosts: allowedHosts)
        }
    }

    private let configuration: Configuration
    private let logger: Logger
    private let registry: PrometheusCollectorRegistry
    /// The server's group and task, for ``stop()``: the group stops it gracefully (a cancelled
    /// Hummingbird server logs its cancellation as an error).
    private let running = Mutex<(group: ServiceGroup, task: Task<Void, Never>)?>(nil)

    /// Makes the process's swift-metrics go to a Prometheus registry the server exposes.
    /// Call once, before the router starts (its timers bind to the factory at creation).
    public static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(RouterMetricsFactory(registry: registry))
        return registry
    }

    /// Prepares a server; nothing listens until ``start(router:iiideas:spool:reload:)``.
    public init(configuration: Configuration, registry: PrometheusCollectorRegistry, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.registry = registry
    }

    /// Binds and serves; returns the bound `host:port` once listening. Throws when the
    /// address cannot be bound. `reload` re-reads the route files as SIGHUP does: `POST /reload`
    /// calls it with `false` (nil while another reload runs: answered 409), the iiidea store
    /// with `true` (wait for it). Without it `POST /reload` answers 404.
    public func start(
        router: SwitchyardRuntime.Router, iiideas: RouterIiideas, spool: Spool?,
        reload: (@Sendable (_ waiting: Bool) -> SwitchyardRuntime.Router.ReloadSummary?)? = nil
    ) throws(AdminError) -> String {
        try configuration.validate()
        let routes = Hummingbird.Router()
        routes.add(middleware: AdminRequestGuard(configuration: configuration))
        addHealthRoutes(to: routes, router: router)
        // The API and the console share one catalog: one lock orders all their changes.
        let catalog = IiideaCatalog(router: router, iiideas: iiideas, spool: spool, reload: reload)
        let groups: [any AdminRouteGroup] = [
            AdminDeadLetterAPI(store: spool.map(router.deadLetters(of:))),
            AdminStatusAPI(router: router),
            AdminIiideaAPI(catalog: catalog),
            Console(catalog: catalog, sessions: ConsoleSessions(token: configuration.token)),
            AdminReloadAPI(reload: reload),
            AdminTapAPI(router: router),
            AdminInjectAPI(router: router, iiideas: iiideas),
            AdminOAuthAPI(iiideas: iiideas),
        ]
        for group in groups { group.addRoutes(to: routes) }

        let outcome = StartOutcome()
        // The guard plugins' servers use: without it, slow clients could hold every descriptor.
        let limits = HTTPConnectionLimits(
            name: "admin", maximumConnections: configuration.maximumConnections, maximumPerPeer: configuration.maximumPerPeer,
            headerTimeout: configuration.headerTimeout, bodyTimeout: configuration.headerTimeout,
            reporter: AdminGuardReporter(logger: logger))
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [HTTPConnectionGuard(limits: limits)])
        let application = Application(
            router: routes,
            server: .http1(configuration: http1),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { channel in
                outcome.report(.success(channel.localAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"))
            },
            logger: logger
        )
        let place = "\(configuration.host):\(configuration.port)"
        let group = ServiceGroup(configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        let task = Task.detached {
            do {
                try await group.run()
            } catch {
                outcome.report(.failure(AdminError(description: "cannot serve on \(place): \(error)")))
            }
        }
        running.withLock { $0 = (group, task) }
        switch outcome.wait(seconds: 15) {
        case .success(let address)?:
            logger.info("admin listening", metadata: ["address": .string(address)])
            return address
        case .failure(let error)?: throw error
        case nil: throw AdminError(description: "the admin port \(place) did not start within 15 s")
        }
    }

    /// Stops serving: requests in progress finish and event streams end (bounded wait; after
    /// 5 s the server is cancelled).
    public func stop() {
        guard let (group, task) = running.withLock({ $0 }) else { return }
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await group.triggerGracefulShutdown()
            await task.value
            done.signal()
        }
        if done.wait(timeout: .now() + .seconds(5)) == .timedOut {
            task.cancel()
            _ = done.wait(timeout: .now() + .seconds(2))
        }
    }

    private func addHealthRoutes(to routes: Hummingbird.Router<BasicRequestContext>, router: SwitchyardRuntime.Router) {
        routes.get("healthz") { _, _ -> Response in Response.text("ok\n") }
        routes.get("readyz") { _, _ -> Response in
            let readiness = router.readiness
            let waiting = readiness.filter { !$0.ready }.map(\.instance)
            // One line naming them all, then one per instance with its last warning: the why.
            let reasons = waiting.compactMap { name in router.notReadyReason(of: name).map { "\(name): \($0)\n" } }
            let body = waiting.isEmpty ? "ready\n" : "not ready: " + waiting.joined(separator: ", ") + "\n" + reasons.joined()
            return Response.text(body, status: waiting.isEmpty ? .ok : .serviceUnavailable)
        }
        let registry = self.registry
        routes.get("metrics") { _, _ -> Response in
            // The router's counters are atomics on the hot path; they reach their
            // swift-metrics handles (and so this registry) here, once per scrape.
            router.publishMetrics()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
    }
}

/// The first thing the server task reports: where it listens, or why it cannot.
private final class StartOutcome: Sendable {
    private let result = Mutex<Result<String, AdminError>?>(nil)
    private let reported = DispatchSemaphore(value: 0)

    func report(_ outcome: Result<String, AdminError>) {
        let first = result.withLock { result in
            guard result == nil else { return false }
            result = outcome
            return true
        }
        if first { reported.signal() }
    }

    func wait(seconds: Int) -> Result<String, AdminError>? {
        guard reported.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
        return result.withLock { $0 }
    }
}
