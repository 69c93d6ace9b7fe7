import Foundation
internal import Logging
internal import SwitchyardABI
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRuntime
internal import SwitchyardSpool
internal import SwitchyardStore
import Synchronization

/// Switches iiideas on and off and talks to their plugin pieces: asks them to enable and
/// disable, runs service pieces and matches their answers. Keeps every iiidea's
/// ``IiideaState`` across reloads; the graph to work on is passed in by ``RouterIiideas``.
final class IiideaController: Sendable {
    let logger: Logger
    /// The iiideas' switches by id, kept across reloads.
    private let states = Mutex<[String: IiideaState]>([:])
    /// Service piece calls waiting for their plugin's answer, by run token.
    private let calls = Mutex<[UInt64: PieceCall]>([:])
    private let tokens = Atomic<UInt64>(0)
    /// Where pieces a ready instance refused are asked again: never on the plugin's thread
    /// that reported readiness (a plugin may answer `piece_enable` from that very thread).
    private let retries = DispatchQueue(label: "switchyard.iiidea.retries")
    /// When the pieces were last asked after a start or a reload: a piece that refuses within
    /// ``startupGrace`` of it is usually an instance still connecting (a D-Bus bus, a broker),
    /// whose readiness asks again — worth a warning only if it is still refused after.
    private let askedAfterStart = Mutex<ContinuousClock.Instant?>(nil)
    static let startupGrace: Duration = .seconds(5)

    /// Refuses pieces that need an OAuth connection nobody has connected yet.
    let oauth: OAuthConnections

    init(logger: Logger, oauth: OAuthConnections) {
        self.logger = logger
        self.oauth = oauth
    }

    /// What a piece refused for may have passed (an instance says it is ready: a board now
    /// connected, an identity registered; a person connected an OAuth connection): every
    /// enabled iiidea left inactive for a reason `matches` asks its pieces again, soon, on
    /// another thread — never on the plugin's thread that reported. `graph` is read then, so a
    /// reload in between is seen. `cause` ends the log line.
    func askAgain(
        becauseOf cause: String, _ matches: @escaping @Sendable (String) -> Bool, graph: @escaping @Sendable () -> CompiledGraph?
    ) {
        let waiting = states.withLock { states in states.values.contains { $0.isEnabled && $0.inactiveReason.map(matches) == true } }
        guard waiting else { return }
        retries.async {
            guard let graph = graph() else { return }
            let states = self.states.withLock { $0 }
            for iiidea in graph.plan.iiideas {
                guard let state = states[iiidea.id], state.isEnabled, state.inactiveReason.map(matches) == true else { continue }
                self.activate(iiidea, state: state, in: graph)
                if state.inactiveReason == nil {
                    self.logger.notice("iiidea active: its pieces accepted once \(cause)", metadata: ["iiidea": .string(iiidea.id)])
                }
            }
        }
    }

    /// The state of `iiidea`: the one it had before a reload, else the stored switch (`saved`),
    /// else its declared default.
    func state(of iiidea: PlannedIiidea, saved: [String: Bool]) -> IiideaState {
        states.withLock { states in
            if let existing = states[iiidea.id] { return existing }
            let state = IiideaState(id: iiidea.id, enabled: saved[iiidea.id] ?? iiidea.declaration.enabledByDefault)
            states[iiidea.id] = state
            return state
        }
    }

    /// Enables or disables iiidea `id` of `graph` for good (stored in `store`, so the choice
    /// survives restarts). Enabling asks its pieces; one may refuse, leaving it enabled but
    /// inactive (see ``IiideaState/inactiveReason``).
    func set(_ id: String, enabled: Bool, in graph: CompiledGraph, store: (any IiideaSwitchStore)?) throws(RouterError) {
        guard let iiidea = graph.plan.iiideas.first(where: { $0.id == id }), let state = states.withLock({ $0[id] }) else {
            throw RouterError(iiidea: id, reason: "there is no iiidea with this id")
        }
        do {
            try store?.setIiideaSwitch(id, enabled: enabled)
        } catch {
            throw RouterError(iiidea: id, reason: "cannot store the iiidea's state: \(error)")
        }
        apply(iiidea, state: state, enabled: enabled, in: graph)
    }

    /// Follows the switches another router stored (`switches`, all of them): each iiidea of
    /// `graph` whose switch differs from its state here is enabled or disabled, as `set`
    /// would, without storing anything.
    func follow(_ switches: [String: Bool], in graph: CompiledGraph) {
        for iiidea in graph.plan.iiideas {
            guard let enabled = switches[iiidea.id], let state = states.withLock({ $0[iiidea.id] }), state.isEnabled != enabled else {
                continue
            }
            apply(iiidea, state: state, enabled: enabled, in: graph)
        }
    }

    private func apply(_ iiidea: PlannedIiidea, state: IiideaState, enabled: Bool, in graph: CompiledGraph) {
        let id = iiidea.id
        // Held back until its pieces answer, as a new iiidea is.
        if enabled, !state.isEnabled { state.set(inactiveReason: IiideaState.pending) }
        state.set(enabled: enabled)
        if enabled { activate(iiidea, state: state, in: graph) } else { deactivate(iiidea, state: state, in: graph) }
        logger.notice(enabled ? "iiidea enabled" : "iiidea disabled", metadata: ["iiidea": .string(id)])
    }

    /// Every iiidea of `graph` with its switch and, when a piece refused to enable, why it is inactive.
    func list(_ graph: CompiledGraph) -> [(iiidea: PlannedIiidea, enabled: Bool, inactiveReason: String?)] {
        let states = states.withLock { $0 }
        return graph.plan.iiideas.map { ($0, states[$0.id]?.isEnabled ?? false, states[$0.id]?.inactiveReason) }
    }

    /// The plugin ports an iiidea uses as pieces, with the preferences each is enabled with.
    private func pieces(of iiidea: PlannedIiidea) -> [(port: PortReference, preferences: JSONValue)] {
        let declaration = iiidea.declaration
        var pieces: [(PortReference, JSONValue)] = [
            (declaration.trigger.value, .object([:])), (declaration.action.value, declaration.actionPreferences?.json ?? .object([:])),
        ]
        if let remote = declaration.remote { pieces.append((remote.value, .object([:]))) }
        return pieces
    }

    /// Asks every piece of an enabled iiidea to enable; the first refusal leaves it inactive
    /// with that reason.
    private func activate(_ iiidea: PlannedIiidea, state: IiideaState, in graph: CompiledGraph) {
        var reason: String?
        // The built-in http piece needs its OAuth connection connected.
        if case .http(_, _, _, let connection?) = iiidea.service, let refusal = oauth.refusal(for: connection) {
            reason = "http refused: \(refusal)"
        }
        var accepted: [PortReference] = []
        for piece in pieces(of: iiidea) where reason == nil {
            switch graph.enablePiece(piece.port, iiidea: iiidea.id, preferences: piece.preferences) {
            case .accepted: accepted.append(piece.port)
            // A piece of an exclusive instance another router holds: never started, so not asked.
            case .standingBy: reason = "\(piece.port.instance) stands by: another router holds it"
            case .refused(let message): reason = "\(piece.port) refused: \(message)"
            }
        }
        state.set(acceptedPieces: accepted)
        state.set(inactiveReason: reason)
        guard let reason else { return }
        let sinceStart = askedAfterStart.withLock { $0 }.map { ContinuousClock.now - $0 } ?? Self.startupGrace
        guard sinceStart < Self.startupGrace else {
            logger.warning(
                "iiidea inactive: a piece refused to enable", metadata: ["iiidea": .string(iiidea.id), "reason": .string(reason)])
            return
        }
        logger.info(
            "iiidea waits for its pieces while the instances start", metadata: ["iiidea": .string(iiidea.id), "reason": .string(reason)])
        let left = Self.startupGrace - sinceStart
        let milliseconds = Int(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
        retries.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [logger] in
            guard state.isEnabled, let still = state.inactiveReason else { return }
            logger.warning(
                "iiidea inactive: a piece still refuses to enable \(Self.startupGrace) after the start",
                metadata: ["iiidea": .string(iiidea.id), "reason": .string(still)])
        }
    }

    /// Tells every piece of an iiidea that accepted `piece_enable` it was disabled (a piece that
    /// refused, or was never asked, is not told).
    private func deactivate(_ iiidea: PlannedIiidea, state: IiideaState, in graph: CompiledGraph) {
        state.set(inactiveReason: nil)
        for piece in state.takeAcceptedPieces() { graph.disablePiece(piece, iiidea: iiidea.id) }
    }

    /// Enables the pieces of every enabled iiidea (after start and after a reload; plugins
    /// see enable again for an iiidea they already serve and should accept it quietly).
    func activateEnabled(in graph: CompiledGraph) {
        askedAfterStart.withLock { $0 = .now }
        let states = states.withLock { $0 }
        for iiidea in graph.plan.iiideas {
            if let state = states[iiidea.id], state.isEnabled { activate(iiidea, state: state, in: graph) }
        }
    }

    /// After a reload from `old` to `new`: the pieces of an enabled iiidea that is gone or
    /// whose pieces or preferences changed are disabled first (on the old graph), then every
    /// enabled iiidea of `new` is enabled, so a plugin sees disable + enable with the new
    /// preferences. The switches of iiideas that are gone are forgotten.
    func reconcile(from old: CompiledGraph, to new: CompiledGraph) {
        let fingerprints = Dictionary(
            new.plan.iiideas.map { ($0.id, $0.declaration.pieceFingerprint) }, uniquingKeysWith: { first, _ in first })
        let states = states.withLock { states in
            let before = states
            for id in before.keys where fingerprints[id] == nil { states.removeValue(forKey: id) }
            return before
        }
        for iiidea in old.plan.iiideas where fingerprints[iiidea.id] != iiidea.declaration.pieceFingerprint {
            guard let state = states[iiidea.id] else { continue }
            deactivate(iiidea, state: state, in: old)
        }
        activateEnabled(in: new)
    }

    /// Runs the service piece `reference` of `graph` and waits (at most `timeout`) for its output.
    func executePiece(
        _ reference: PortReference, iiidea: String, input: JSONValue, preferences: JSONValue, timeout: UInt64, in graph: CompiledGraph
    ) throws(ServiceError) -> JSONValue {
        let token = tokens.add(1, ordering: .relaxed).newValue
        let call = PieceCall()
        calls.withLock { $0[token] = call }
        if let refusal = graph.executePiece(reference, iiidea: iiidea, input: input, preferences: preferences, token: token) {
            calls.withLock { _ = $0.removeValue(forKey: token) }
            throw ServiceError(description: refusal)
        }
        if call.done.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout))) == .timedOut {
            calls.withLock { _ = $0.removeValue(forKey: token) }
            throw ServiceError(description: "\(reference) gave no answer within \(Double(timeout) / 1e9) s")
        }
        switch call.result.withLock({ $0 }) {
        case .success(let output)?: return output
        case .failure(let error)?: throw error
        case nil: throw ServiceError(description: "\(reference) gave no answer")
        }
    }

    /// The host's piece_done.
    func pieceDone(token: UInt64, status: Int32, output: [UInt8]) {
        guard let call = calls.withLock({ $0.removeValue(forKey: token) }) else { return }
        let result: Result<JSONValue, ServiceError>
        if status == SY_OK {
            if let value = try? JSONValue(parsing: output) {
                result = .success(value)
            } else {
                result = .failure(ServiceError(description: "the service piece returned output that is not JSON"))
            }
        } else {
            result = .failure(ServiceError(description: String(decoding: output, as: UTF8.self)))
        }
        call.result.withLock { $0 = result }
        call.done.signal()
    }
}

/// A service piece call waiting for the plugin's piece_done.
final class PieceCall: Sendable {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<JSONValue, ServiceError>?>(nil)
}
