internal import Logging
internal import SwitchyardCore
internal import SwitchyardScript
internal import SwitchyardStore
import Synchronization

/// A route's script at run time, whoever runs the route (a plain route's slice, an
/// at-least-once worker, an iiidea's service piece): the call counted and timed, its prints
/// logged, its failures counted and logged, its outputs checked against their types, its
/// persistent state kept.
final class RouteScriptStage: Sendable {
    let script: Script
    private let plan: PlannedRoute
    private let counters: RouteCounters
    private let logger: Logger
    private let store: (any PluginStateStore)?
    /// Where a route with `state: persistent` keeps `state`.
    private let persistentState: PersistentScriptState?
    /// What a failure means for the envelope, as the log says it.
    private let failureOutcome: String

    /// The stage of `plan`'s script, nil when it has none. A script that a reload did not
    /// carry over starts from the state stored for it (`state: persistent`).
    init?(plan: PlannedRoute, counters: RouteCounters, logger: Logger, store: (any PluginStateStore)?, failureOutcome: String) {
        guard let script = plan.script else { return nil }
        self.script = script
        self.plan = plan
        self.counters = counters
        self.logger = logger
        self.store = store
        self.failureOutcome = failureOutcome
        persistentState = plan.declaration.script?.persistentState == true ? PersistentScriptState(route: plan.name) : nil
        if let persistentState, !plan.carriesScriptState { persistentState.restore(into: script, store: store, logger: logger) }
    }

    /// Runs the script on `envelope`: what it sends, or why it failed.
    func run(_ envelope: Envelope) -> Result<[Envelope], ScriptFailure> {
        let run = script.run(envelope, defaults: plan.scriptDefaults)
        counters.scriptCalls.add(1, ordering: .relaxed)
        let (seconds, attoseconds) = run.duration.components
        counters.scriptMicroseconds.add(Int(seconds) * 1_000_000 + Int(attoseconds / 1_000_000_000_000), ordering: .relaxed)
        for line in run.printed {
            logger.info("script printed: \(line)", metadata: ["route": .string(plan.name)])
        }
        if let failure = run.failure { return .failure(failed(failure, envelope)) }
        for output in run.outputs {
            if let problem = typeProblem(of: output, input: envelope) {
                return .failure(failed(ScriptFailure(kind: .refused, message: problem), envelope))
            }
        }
        keepState()
        return .success(run.outputs)
    }

    /// The run on `envelope` as the route's outcome: what it sends tapped, nothing sent
    /// counted as filtered.
    func outcome(for envelope: Envelope, tappedBy tap: TapPoint) -> RouteOutcome {
        switch run(envelope) {
        case .failure(let failure): return .failed(failure)
        case .success(let outputs):
            if tap.isActive { for output in outputs { tap.publish(output) } }
            switch outputs.count {
            case 0:
                counters.filtered.add(1, ordering: .relaxed)
                return .filtered
            case 1: return .one(outputs[0])
            default: return .many(outputs)
            }
        }
    }

    /// Writes `state` to the store when it is due (`force`: when the route stops).
    func keepState(force: Bool = false) {
        persistentState?.keep(script, store: store, logger: logger, force: force)
    }

    /// Why `output` may not leave the route: its type is unknown, or its body does not fit
    /// the type's schema. Checked when the script or the route's `type:` set the type.
    private func typeProblem(of output: Envelope, input: Envelope) -> String? {
        guard output.type != input.type || plan.declaration.outputType != nil, output.type != "*" else { return nil }
        guard let types = plan.scriptTypes else { return nil }
        guard let definition = types[output.type] else {
            return "the script sent an envelope of type '\(output.type)', which no plugin or route file defines"
        }
        let violations = definition.schema.violations(of: output.decodedBody())
        guard !violations.isEmpty else { return nil }
        return "the script sent a body that is not a \(output.type): "
            + violations.prefix(5).map(\.description).joined(separator: "; ")
    }

    /// Counts and logs a failed call (the first ten, then every thousandth).
    private func failed(_ failure: ScriptFailure, _ envelope: Envelope) -> ScriptFailure {
        let count: Int
        if failure.isBudgetStop {
            count = counters.scriptBudgetStops.add(1, ordering: .relaxed).newValue
        } else {
            count = counters.scriptErrors.add(1, ordering: .relaxed).newValue
        }
        let total = counters.scriptBudgetStops.load(ordering: .relaxed) + counters.scriptErrors.load(ordering: .relaxed)
        if count <= 10 || total.isMultiple(of: 1000) {
            logger.warning(
                "script failed on an envelope (\(failure.kind.rawValue)): \(failure.message)",
                metadata: [
                    "route": .string(plan.name), "envelope": .string(envelope.id), "outcome": .string(failureOutcome),
                ])
        }
        return failure
    }
}

/// Where a route with `state: persistent` keeps its script's `state` table: one key of the
/// router's state store (the spool, or the shared store), written at most once a second while
/// it changes and once more when the route stops. A crash loses at most the last second's
/// changes.
final class PersistentScriptState: Sendable {
    /// The store's owner name for the route: routes and instances share the store's key space,
    /// and no instance name can contain a space.
    let owner: String
    static let key = Array("script.state".utf8)
    private struct Progress {
        var written: [UInt8]?
        var lastWrite: ContinuousClock.Instant?
        var failures = 0
    }
    private let progress = Mutex(Progress())

    init(route: String) { owner = "route " + route }

    /// Restores the stored table into `script`, if there is one.
    func restore(into script: Script, store: (any PluginStateStore)?, logger: Logger) {
        guard let store else { return }
        do {
            guard let stored = try store.stateValue(of: owner, key: Self.key) else { return }
            if script.restoreState(stored) {
                progress.withLock { $0.written = stored }
            } else {
                logger.error(
                    "the script's stored state is not a JSON object; the script starts with an empty state",
                    metadata: ["route": .string(owner)])
            }
        } catch {
            logger.error("the script's stored state cannot be read: \(error.detail)", metadata: ["route": .string(owner)])
        }
    }

    /// Writes the table if it changed and a second has passed since the last write (`force`:
    /// whatever the time, when the route stops).
    func keep(_ script: Script, store: (any PluginStateStore)?, logger: Logger, force: Bool = false) {
        guard let store else { return }
        let now = ContinuousClock.now
        let due = progress.withLock { progress in force || progress.lastWrite.map { now - $0 >= .seconds(1) } ?? true }
        guard due else { return }
        let encoded: [UInt8]
        switch script.stateJSON() {
        case .success(let bytes): encoded = bytes
        case .failure(let failure):
            complain(failure.message, logger: logger)
            return
        }
        guard encoded.count <= PluginStateLimits.maximumValue else {
            complain(
                "the script's state is \(encoded.count) bytes as JSON, over the store's limit of \(PluginStateLimits.maximumValue)",
                logger: logger)
            return
        }
        guard progress.withLock({ $0.written != encoded }) else { return }
        do {
            try store.setState(of: owner, key: Self.key, value: encoded)
            progress.withLock {
                $0.written = encoded
                $0.lastWrite = now
            }
        } catch {
            complain("the script's state cannot be written: \(error.detail)", logger: logger)
        }
    }

    private func complain(_ message: String, logger: Logger) {
        let failures = progress.withLock { progress in
            progress.lastWrite = ContinuousClock.now
            progress.failures += 1
            return progress.failures
        }
        if failures <= 10 || failures.isMultiple(of: 1000) { logger.error("\(message)", metadata: ["route": .string(owner)]) }
    }
}
