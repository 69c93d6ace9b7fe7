public import ArgumentParser
public import Logging
import SwitchyardConfig
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

/// Options every command that reads routes shares.
struct GraphOptions: ParsableArguments {
    @Argument(help: "A route file, or a directory whose *.yaml files are merged.")
    var routes: String = "Routes"

    @Option(name: .long, help: "The plugin directory (overrides SWITCHYARD_PLUGINS and plugins.dir in the YAML; default Plugins).")
    var plugins: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    /// How log lines look.
    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(name: .long, help: "Log format: text (key=value lines) or json (one object per line).")
    var logFormat: LogFormat = .text

    func makeLogger() -> Logger {
        let level = logLevel
        let format = logFormat
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return RedactingLogHandler(inner: handler)
            case .json:
                return RedactingLogHandler(inner: JSONLogHandler(label: label, logLevel: level))
            }
        }
        return Logger(label: "switchyard")
    }

    /// Loads the routes and plugins and validates them; prints every problem to standard
    /// error (and to `report`). Returns the plan, or nil when anything is wrong.
    ///
    /// `store` opens the router's store for a configuration that wants one (see
    /// ``SwitchyardConfig/GraphConfig/wantsStore``): its obtained iiideas and preference
    /// overrides join the plan. A stored iiidea that does not validate is left out, logged and
    /// named in `skipped`; it never stops the route files' graph. A store that cannot be read
    /// leaves the stored iiideas out at start (the route files' graph runs), but fails a reload
    /// (`reloading`), so that a running router does not drop them for a moment's outage.
    func loadPlan(
        logger: Logger, reportingProblemsTo report: ((String) -> Void)? = nil, store: ((GraphConfig) -> (any IiideaCatalogStore)?)? = nil,
        skipped: ((String, String) -> Void)? = nil, reloading: Bool = false
    ) -> GraphPlan? {
        let (config, configProblems) = ConfigLoader(environment: ProcessEnvironment.current).load(path: routes)
        Redaction.register(config.secrets.union([ProcessEnvironment.current["SWITCHYARD_ADMIN_TOKEN"]].compactMap { $0 }))
        let directory = PluginCommandLine.directory(
            option: plugins, environment: ProcessEnvironment.current, configured: config.pluginsDirectory?.value)
        let (loaded, refused) = PluginLoader.loadDirectory(directory)
        for plugin in loaded {
            logger.info(
                "loaded plugin",
                metadata: [
                    "plugin": .string(plugin.manifest.name), "version": .string(plugin.manifest.version),
                    "abi": .stringConvertible(plugin.abiVersion), "path": .string(plugin.path),
                ]
            )
        }
        // With JSON logs every line on standard error is a JSON object, these ones too.
        func emit(_ text: String, level: Logger.Level) {
            guard logFormat == .json else { return printError(text) }
            logger.log(level: level, level == .error ? "route files refused" : "route files", metadata: ["problem": .string(text)])
        }
        for error in refused { emit("error: \(error)", level: .error) }
        let validator = GraphValidator(plugins: loaded)
        var (plan, problems) = validator.validate(config)
        if configProblems.isEmpty, problems.isEmpty, let opened = store?(config) {
            (plan, problems) = validateWithStore(
                config, store: opened, validator: validator, logger: logger, skipped: skipped, reloading: reloading)
        }
        let all = configProblems + problems
        for problem in Diagnostics(all).items {
            emit(problem.description, level: .error)
            report?(problem.description)
        }
        for note in plan?.noteLines ?? [] { emit(note, level: note.contains(": warning: ") ? .warning : .notice) }
        return all.isEmpty ? plan : nil
    }

    /// The stored records that do not validate on `config` each by itself, with their problems.
    private func culprits(
        _ config: GraphConfig, _ records: (obtained: [ObtainedIiidea], overrides: [String: PiecePreferences]), validator: GraphValidator
    ) -> [String: [String]] {
        var found: [String: [String]] = [:]
        for record in records.obtained {
            let (_, problems) = validator.validate(config.applying(obtained: [record], overrides: [:]).config)
            if !problems.isEmpty { found[record.id, default: []] += problems.map(\.message) }
        }
        for (id, preferences) in records.overrides {
            let (_, problems) = validator.validate(config.applying(obtained: [], overrides: [id: preferences]).config)
            if !problems.isEmpty { found[id, default: []] += problems.map(\.message) }
        }
        return found
    }

    /// `config` with the store's iiideas, validated; stored iiideas with problems are left out.
    private func validateWithStore(
        _ config: GraphConfig, store: any IiideaCatalogStore, validator: GraphValidator, logger: Logger,
        skipped: ((String, String) -> Void)?, reloading: Bool
    ) -> (GraphPlan?, [Diagnostic]) {
        let obtained: [ObtainedIiidea]
        let overrides: [String: PiecePreferences]
        do {
            obtained = try store.obtainedIiideas()
            overrides = try store.preferenceOverrides()
        } catch {
            if reloading { return (nil, [Diagnostic("the store's iiideas cannot be read: \(error)", at: nil)]) }
            logger.error("the store's iiideas cannot be read; running the route files' alone", metadata: ["error": "\(error)"])
            return validator.validate(config)
        }
        var left = (obtained: obtained, overrides: overrides)
        var reported: Set<String> = []
        // Each pass leaves out the stored iiideas the previous one found wrong; a stored
        // record can only break itself, so this ends within one pass per record.
        for _ in 0...(obtained.count + overrides.count) {
            let (merged, unusable) = config.applying(obtained: left.obtained, overrides: left.overrides)
            var reasons = unusable
            let (plan, problems) = validator.validate(merged)
            var storeProblems: [String: [String]] = [:]
            var unattributed = false
            // A problem is a stored iiidea's when it points into the store or names one.
            func storedID(of problem: Diagnostic) -> String? {
                GraphConfig.storedIiidea(at: problem.location)
                    ?? merged.iiideas.first { $0.origin != .routeFile && problem.message.contains("'\($0.id)'") }?.id
            }
            for problem in problems {
                guard let id = storedID(of: problem) else {
                    unattributed = true
                    continue
                }
                storeProblems[id, default: []].append(problem.message)
            }
            if unattributed, storeProblems.isEmpty {
                // Problems that name no stored iiidea (one reported at its template's piece in
                // the route file): each record is tried alone on the route files' graph.
                storeProblems = culprits(config, left, validator: validator)
                if storeProblems.isEmpty {
                    logger.error("the store's iiideas do not validate with the route files; running the route files' alone")
                    return validator.validate(config)
                }
            }
            for (id, messages) in storeProblems { reasons.append((id, messages.joined(separator: "; "))) }
            for (id, reason) in reasons where reported.insert(id).inserted {
                logger.error("stored iiidea left out", metadata: ["iiidea": .string(id), "reason": .string(reason)])
                skipped?(id, reason)
            }
            if storeProblems.isEmpty { return (plan, problems) }
            left.obtained.removeAll { storeProblems[$0.id] != nil }
            for id in storeProblems.keys { left.overrides.removeValue(forKey: id) }
        }
        return validator.validate(config)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
