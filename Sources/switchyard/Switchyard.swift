import ArgumentParser
import Logging
import ServiceLifecycle
import SwitchyardAdmin
import SwitchyardConfig
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardPostgres
import SwitchyardRuntime
import SwitchyardSpool
import Synchronization
import UnixSignals

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The `switchyard` command.
@main
struct Switchyard: AsyncParsableCommand {
    /// The router's version.
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "switchyard",
        abstract: "A plugin-based message router: YAML routes between protocol plugins.",
        version: "switchyard \(version) (plugin ABI \(PluginLoader.supportedVersions.map(String.init).joined(separator: ", ")))",
        subcommands: [
            Run.self, Validate.self, Reload.self, Plugins.self, Graph.self, DeadLetters.self, SpoolCommand.self, Iiideas.self, Top.self,
            Explain.self, Tap.self, GraphTest.self, StoreCommand.self, SchemaCommand.self,
        ],
        defaultSubcommand: Run.self
    )
}

/// `switchyard run`: load, validate, run until SIGINT or SIGTERM, drain, stop.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the router on the route files (the default command).")

    @OptionGroup var options: GraphOptions

    @Option(help: "How long to wait on shutdown for queued envelopes and pending acknowledgements.")
    var drainTimeout: String = "10s"

    @Option(help: "The spool database for at-least-once routes (overrides spool.path; default \(ConfigLoader.defaultSpoolPath)).")
    var spool: String?

    @Flag(help: "Reload the routes whenever a route file changes (as SIGHUP does).")
    var watch = false

    @Flag(
        help:
            "Stop (as on SIGTERM, status 0) once every source the routes read has said it is done — a timer with count, standard input at its end — and everything was delivered."
    )
    var exitWhenDone = false

    @Option(help: "Serve the admin HTTP port (metrics, health, API) on host:port (overrides admin.listen; port 0 picks one).")
    var admin: String?

    func run() async throws {
        // Trapped before anything starts: SIGHUP's default action would end the process, and
        // SIGINT/SIGTERM must drain rather than kill.
        let signals = await UnixSignalsSequence(trapping: .sighup, .sigint, .sigterm)
        let logger = options.makeLogger()
        FileDescriptorLimit.raise(logger: logger)
        // Until the router starts nothing is accepted: a signal while the route files load (a
        // slow plugin, a huge file) ends the process at once rather than after the load.
        let whileLoading = SignalExit.install(logger: logger) { name in
            "\(name) while loading the route files: stopping (nothing was started)"
        }
        guard let timeout = DurationText.nanoseconds(drainTimeout) else {
            throw ValidationError("--drain-timeout '\(drainTimeout)' is not a duration such as 10s or 500ms")
        }
        var openSpool: Spool?
        var spoolFailure: String?
        var sharedState: PostgresStore?
        var startedStoreURL: String?
        // The store opens before the graph is checked: its obtained iiideas are part of it.
        let openStore = { (configured: String?, sync: SpoolSync) in
            let path = spool ?? configured ?? ConfigLoader.defaultSpoolPath
            do {
                openSpool = try Spool(path: path, sync: sync, owner: true)
                logger.info("spool open", metadata: ["path": .string(path), "sync": .string(sync.rawValue)])
            } catch {
                spoolFailure = "\(error)"
            }
        }
        let loaded = options.loadPlan(
            logger: logger,
            store: { config in
                if config.wantsStore { openStore(config.spoolPath?.value, config.spoolSync?.value ?? .full) }
                startedStoreURL = config.storeURL?.value
                if let url = config.storeURL?.value, spoolFailure == nil {
                    do {
                        let store = try PostgresStore(url: url, logger: logger)
                        sharedState = store
                        logger.info(
                            "store open",
                            metadata: [
                                "url": .string(store.location),
                                "holds":
                                    "plugin state, iiideas (switches, obtained, preferences, runs), dead letters, exclusive instances' holds",
                            ])
                    } catch {
                        spoolFailure = "\(error)"
                    }
                }
                // Obtained iiideas and overrides: the shared store's, when there is one.
                return sharedState ?? openSpool?.store
            })
        for source in whileLoading { source.cancel() }
        guard let plan = loaded else { throw ExitCode(1) }
        if plan.needsSpool, openSpool == nil, spoolFailure == nil { openStore(plan.spoolPath, plan.spoolSync) }
        if let spoolFailure {
            printError("error: \(spoolFailure)")
            throw ExitCode(1)
        }
        var adminConfiguration: AdminServer.Configuration?
        if let address = admin ?? plan.adminListen {
            let token = plan.adminToken ?? ProcessEnvironment.current["SWITCHYARD_ADMIN_TOKEN"]
            guard var parsed = AdminServer.Configuration(address: address, token: token, allowedHosts: plan.adminAllowedHosts) else {
                throw ValidationError("--admin must be host:port, such as 127.0.0.1:9180")
            }
            parsed.limitConnections(
                plan.adminConnections.maximumConnections, perPeer: plan.adminConnections.maximumPerPeer,
                headerTimeout: plan.adminConnections.headerTimeout)
            do {
                try parsed.validate()
            } catch {
                printError("error: admin: \(error)")
                throw ExitCode(1)
            }
            adminConfiguration = parsed
        }
        // The registry must exist before the routes create their latency timers.
        let registry = adminConfiguration.map { _ in AdminServer.bootstrapMetrics() }
        // Tracing is off unless the route files have `tracing:`; then the router gets a tracer.
        var tracingBackend: TracingBackend?
        if let settings = plan.tracing {
            do {
                tracingBackend = try TracingBackend(settings: settings, logger: logger)
            } catch {
                printError("error: tracing: \(error)")
                throw ExitCode(1)
            }
        }
        let router = Router(plan: plan, logger: logger, spool: openSpool, sharedStore: sharedState, tracing: tracingBackend?.tracing)
        let iiideas = RouterIiideas(router: router)
        // Another router may run an instance whose hold this one lost: stop (exit status 4),
        // and let the service manager start this router again, standing by.
        let holdLost = Atomic<Bool>(false)
        router.exclusiveHolds.whenLost { _ in
            holdLost.store(true, ordering: .relaxed)
            kill(getpid(), SIGTERM)
        }
        // Never deallocated, on any path out (a failed start too): a plugin's threads can
        // outlive its stop() by a few event-loop turns and call the host with their instance's
        // context; the process ends right after.
        _ = Unmanaged.passRetained(router)
        do {
            try router.start()
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
        let reloader = RouteReloader(
            options: options, spoolPath: spool, spool: openSpool, router: router, iiideas: iiideas, logger: logger,
            drainTimeout: .nanoseconds(Int64(timeout)), startedTracing: plan.tracing, startedStoreURL: startedStoreURL)
        // Switches set on other routers sharing the store are followed from now on; iiideas
        // they obtained or whose preferences they changed are loaded with a reload.
        let switchWatch = sharedState?.watchIiideas(
            logger: logger, switched: { id in iiideas.followSwitch(id) },
            catalogChanged: { reloader.reloadSoon() }, oauthChanged: { name in iiideas.followOAuthChange(name) })
        defer { switchWatch?.stop() }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        // First, so shut down last: after the router's drain, its spans are flushed.
        if let tracingBackend { services.append(.init(service: tracingBackend.service)) }
        if let adminConfiguration, let registry {
            let server = AdminServer(configuration: adminConfiguration, registry: registry, logger: logger)
            do {
                _ = try server.start(
                    router: router, iiideas: iiideas, spool: openSpool,
                    reload: { waiting in waiting ? reloader.reload() : reloader.reloadUnlessBusy() })
            } catch {
                printError("error: admin: \(error)")
                router.shutdown(drainTimeout: .nanoseconds(Int64(timeout)))
                throw ExitCode(1)
            }
            services.append(.init(service: AdminService(server: server)))
        }
        if watch {
            do {
                try RouteFileWatcher(path: options.routes).start()
            } catch {
                logger.error("\(error); route files are not watched (SIGHUP still reloads)")
            }
        }
        let routerService = RouterService(router: router, drainTimeout: .nanoseconds(Int64(timeout)), logger: logger)
        services.append(.init(service: routerService))
        services.append(
            .init(
                service: ProcessSignals(signals: signals, reloader: reloader, logger: logger),
                successTerminationBehavior: .gracefullyShutdownGroup))
        if exitWhenDone {
            services.append(.init(service: SourcesFinished(router: router), successTerminationBehavior: .gracefullyShutdownGroup))
        }
        // One group owns the rest: SIGINT or SIGTERM ends ProcessSignals, which starts the
        // graceful shutdown; it ends the services in reverse order (the router's drain, then
        // the admin port, which answers /metrics and /readyz until then).
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        // Everything has started: a `Type=notify` unit is now active.
        SystemdNotification.send("READY=1", "STATUS=routing: \(plan.instances.count) instances, \(plan.routes.count) routes")
        try await group.run()
        if routerService.lost.load(ordering: .relaxed) > 0 { throw ExitCode(3) }
        if holdLost.load(ordering: .relaxed) { throw ExitCode(4) }
    }
}

/// `switchyard validate`: check everything without starting anything.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check route files, plugin configs and types; exit non-zero on any error.")

    @OptionGroup var options: GraphOptions

    func run() throws {
        var options = options
        if options.logLevel == .info { options.logLevel = .warning }
        guard let plan = options.loadPlan(logger: options.makeLogger()) else { throw ExitCode(1) }
        print("ok: \(plan.instances.count) instances, \(plan.routes.count) routes, \(plan.types.definitions.count) types")
    }
}

/// `switchyard plugins list|inspect`.
struct Plugins: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the plugins of a directory or print one plugin's manifest.",
        subcommands: [List.self, Inspect.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the plugins a directory holds, and any it refuses.")

        @Option(name: .long, help: "The plugin directory (default: SWITCHYARD_PLUGINS, else Plugins).")
        var plugins: String?

        func run() throws {
            let directory = PluginCommandLine.directory(option: plugins, environment: ProcessEnvironment.current)
            let (loaded, refused) = PluginLoader.loadDirectory(directory)
            for plugin in loaded {
                let ports = plugin.manifest.ports.map { "\($0.name)(\($0.direction.rawValue))" }.joined(separator: " ")
                print("\(plugin.manifest.name)\t\(plugin.manifest.version)\tabi \(plugin.abiVersion)\t\(plugin.path)\t\(ports)")
            }
            for error in refused { printError("error: \(error)") }
            if !refused.isEmpty { throw ExitCode(1) }
        }
    }

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Load one plugin file and print its manifest as JSON.")

        @Argument(help: "The plugin file (lib*.so).")
        var file: String

        func run() throws {
            do {
                let plugin = try PluginLoader.load(file: file)
                var manifest = plugin.manifestJSON
                if case .object(var members) = manifest {
                    members["abi"] = .int(Int(plugin.abiVersion))
                    members["path"] = .string(plugin.path)
                    manifest = .object(members)
                }
                print(manifest.serialized())
            } catch {
                printError("error: \(error)")
                throw ExitCode(1)
            }
        }
    }
}

/// `switchyard graph`: the routing graph for a diagram tool.
struct Graph: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the routing graph as Mermaid or Graphviz DOT.")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case mermaid, dot
    }

    @OptionGroup var options: GraphOptions

    @Option(help: "mermaid or dot.")
    var format: Format = .mermaid

    /// Draws the graph `validate` accepts, with each port's types from its plugin.
    func run() throws {
        var options = options
        if options.logLevel == .info { options.logLevel = .warning }
        guard let plan = options.loadPlan(logger: options.makeLogger()) else { throw ExitCode(1) }
        let (config, _) = ConfigLoader(environment: ProcessEnvironment.current).load(path: options.routes)
        var types: [String: [String]] = [:]
        for instance in plan.instances {
            for port in instance.ports where !port.isUntyped { types["\(instance.name).\(port.name)"] = port.types }
        }
        print(format == .mermaid ? GraphRenderer.mermaid(config, portTypes: types) : GraphRenderer.dot(config, portTypes: types))
    }
}

/// Writes one line to standard error, secrets masked (see ``Redaction``).
func printError(_ text: String) {
    var line = Redaction.redact(text) + "\n"
    line.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}
