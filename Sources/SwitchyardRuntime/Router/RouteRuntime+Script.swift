internal import Logging
internal import SwitchyardCore
internal import SwitchyardScript
internal import SwitchyardStore
import Synchronization

/// What a route makes of one envelope.
enum RouteOutcome {
    /// `when:` rejected it, or the script dropped it (counted as filtered).
    case filtered
    /// One envelope to send: the common case, with no array.
    case one(Envelope)
    /// Several (a script that emitted more than one), in order.
    case many([Envelope])
    /// The script failed: the envelope takes the route's failure path (dropped and counted on
    /// an at-most-once route, a dead letter on an at-least-once one).
    case failed(ScriptFailure)
}

extension RouteRuntime {
    /// Runs the route's script on `envelope`: counted, timed, its prints logged, its outputs
    /// checked against their types.
    func run(_ script: Script, on envelope: Envelope) -> RouteOutcome {
        let run = script.run(envelope, defaults: plan.scriptDefaults)
        counters.scriptCalls.add(1, ordering: .relaxed)
        let (seconds, attoseconds) = run.duration.components
        counters.scriptMicroseconds.add(Int(seconds) * 1_000_000 + Int(attoseconds / 1_000_000_000_000), ordering: .relaxed)
        for line in run.printed {
            router.logger.info("script printed: \(line)", metadata: ["route": .string(name)])
        }
        if let failure = run.failure { return scriptFailed(failure, envelope) }
        for output in run.outputs {
            if let problem = typeProblem(of: output, input: envelope) {
                return scriptFailed(ScriptFailure(kind: .refused, message: problem), envelope)
            }
        }
        if plan.declaration.script?.persistentState == true { keepState(of: script) }
        if tap.isActive { for output in run.outputs { tap.publish(output) } }
        switch run.outputs.count {
        case 0:
            counters.filtered.add(1, ordering: .relaxed)
            return .filtered
        case 1: return .one(run.outputs[0])
        default: return .many(run.outputs)
        }
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
    private func scriptFailed(_ failure: ScriptFailure, _ envelope: Envelope) -> RouteOutcome {
        let count: Int
        if failure.isBudgetStop {
            count = counters.scriptBudgetStops.add(1, ordering: .relaxed).newValue
        } else {
            count = counters.scriptErrors.add(1, ordering: .relaxed).newValue
        }
        let total = counters.scriptBudgetStops.load(ordering: .relaxed) + counters.scriptErrors.load(ordering: .relaxed)
        if count <= 10 || total.isMultiple(of: 1000) {
            router.logger.warning(
                "script failed on an envelope (\(failure.kind.rawValue)): \(failure.message)",
                metadata: [
                    "route": .string(name), "envelope": .string(envelope.id),
                    "outcome": .string(isAtLeastOnce ? "dead letter" : "dropped"),
                ])
        }
        return .failed(failure)
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

extension RouteRuntime {
    /// Writes the script's `state` to the store when it is due.
    func keepState(of script: Script, force: Bool = false) {
        persistentState?.keep(script, store: router.stateStore, logger: router.logger, force: force)
    }
}
