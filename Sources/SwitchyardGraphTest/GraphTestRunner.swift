import Foundation
public import Logging
internal import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardIiideas
public import SwitchyardRuntime
internal import SwitchyardScript
internal import SwitchyardSpool

/// The result of one test case.
public struct GraphTestOutcome: Sendable {
    /// The case's name.
    public var name: String
    /// Where the case is written.
    public var location: SourceLocation
    /// What did not match, as readable lines (empty: it passed).
    public var failures: [String]
    /// How long it ran.
    public var duration: Duration

    /// Whether it passed.
    public var passed: Bool { failures.isEmpty }
}

/// Runs test cases against a validated graph: the real ``Router`` with every instance replaced
/// by a stand-in exposing the real plugin's ports, types and schemas (see ``FakePlugin``).
/// Its routes, conditions, maps, templates, iiideas with their built-in pieces, spool and
/// dead letters are the production ones; no plugin code runs, so nothing reaches the network.
public struct GraphTestRunner: Sendable {
    private let plan: GraphPlan
    private let logger: Logger

    /// A runner for `plan` (as ``GraphValidator`` made it, with the real plugins).
    public init(plan: GraphPlan, logger: Logger) {
        self.plan = plan
        self.logger = logger
    }

    /// Runs one case in a router of its own, with a spool in a temporary folder.
    public func run(_ testCase: GraphTestCase) -> GraphTestOutcome {
        let started = ContinuousClock.now
        var outcome = GraphTestOutcome(name: testCase.name, location: testCase.location, failures: [], duration: .zero)
        outcome.failures = execute(testCase)
        outcome.duration = ContinuousClock.now - started
        return outcome
    }

    /// Names in the case that are not in the graph (a misspelt port would otherwise only show
    /// as "expected 1 envelope, got 0").
    private func unknownNames(in testCase: GraphTestCase) -> [String] {
        func has(_ port: String, _ direction: PortDirection) -> Bool {
            guard let reference = PortReference(port) else { return false }
            return plan.instances.contains { instance in
                instance.name == reference.instance && instance.ports.contains { $0.name == reference.port && $0.direction == direction }
            }
        }
        func written(_ key: String) -> String { testCase.keyLocations[key].map(\.description) ?? "\(testCase.location)" }
        var problems: [String] = []
        for expectation in testCase.expectations where !has(expectation.port.description, .sink) {
            problems.append("expect (\(expectation.location)): \(expectation.port) is not a sink port of this graph")
        }
        for port in testCase.sinks.keys.sorted() where !has(port, .sink) {
            problems.append("sinks (\(written("sinks." + port))): \(port) is not a sink port of this graph")
        }
        let iiideas = Set(plan.iiideas.map(\.id))
        for name in testCase.services.keys.sorted() where !has(name, .service) && !iiideas.contains(name) {
            problems.append("services (\(written("services." + name))): \(name) is neither a service port nor an iiidea of this graph")
        }
        let routes = Set(plan.routes.map(\.name))
        for expected in testCase.deadLetters where !routes.contains(expected.route) {
            problems.append("dead_letters (\(expected.location)): no route is named '\(expected.route)'")
        }
        return problems
    }

    private func execute(_ testCase: GraphTestCase) -> [String] {
        let unknown = unknownNames(in: testCase)
        guard unknown.isEmpty else { return unknown }
        let sessionID = GraphTestSessions.shared.reserve()
        var testPlan = FakePlugin.withoutHTTP(plan, config: FakePlugin.config(session: sessionID))
        for index in plan.instances.indices {
            testPlan.instances[index].plugin = FakePlugin.standIn(for: plan.instances[index].plugin)
            testPlan.instances[index].config = FakePlugin.config(session: sessionID)
        }
        // Each case starts its scripts afresh (their state is the case's own) on its fixed clock.
        for index in testPlan.routes.indices {
            guard let script = testPlan.routes[index].script else { continue }
            do {
                let fresh = try Script(source: script.source, limits: script.limits)
                fresh.setClock(testCase.clock)
                testPlan.routes[index].script = fresh
            } catch {
                return ["the script of route '\(testPlan.routes[index].name)' does not compile: \(error)"]
            }
        }
        let session = GraphTestSession(plan: testPlan, testCase: testCase)
        GraphTestSessions.shared.register(session, as: sessionID)
        defer { GraphTestSessions.shared.remove(sessionID) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-test-\(ULID.next())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let spool: Spool
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            spool = try Spool(path: folder.appendingPathComponent("spool.db").path, sync: .normal, owner: true)
        } catch {
            return ["the test's spool cannot be opened: \(error)"]
        }
        let router = Router(plan: testPlan, logger: logger, spool: spool, routeThreads: 2)
        let iiideas = RouterIiideas(router: router)
        do {
            try router.start()
        } catch {
            return ["the graph did not start: \(error)"]
        }
        var running = true
        defer { if running { router.shutdown(drainTimeout: .seconds(1)) } }
        var failures: [String] = []
        for (ids, enabled) in [(testCase.enable, true), (testCase.disable, false)] {
            for id in ids {
                do {
                    try iiideas.set(id, enabled: enabled)
                } catch {
                    failures.append("\(enabled ? "enable" : "disable"): \(error)")
                }
            }
        }
        for (index, input) in testCase.inputs.enumerated() {
            session.begin(input: index)
            if let problem = inject(input, session: session, router: router, testCase: testCase) {
                failures.append("input #\(index + 1) (\(input.location)): \(problem)")
                break
            }
        }
        failures += GraphTestVerdict(testCase: testCase, deliveries: session.deliveries).failures
        // An at-least-once route writes a dead letter with its next spool batch, which may be
        // its last one, at shutdown.
        router.shutdown(drainTimeout: .seconds(1))
        running = false
        for expected in testCase.deadLetters {
            let letters = (try? spool.deadLetters(route: expected.route, limit: GraphTestSession.maximumCaptured)) ?? []
            if letters.count != expected.count {
                let reasons = letters.prefix(3).map { "\($0.sink): \($0.error)" }.joined(separator: "; ")
                failures.append(
                    "dead_letters.\(expected.route) (\(expected.location)): expected \(expected.count), got \(letters.count)"
                        + (reasons.isEmpty ? "" : " (\(reasons))"))
            }
        }
        return failures
    }

    /// Emits one input at its stand-in source and waits for the graph to settle; a problem, or nil.
    private func inject(_ input: GraphTestCase.Input, session: GraphTestSession, router: Router, testCase: GraphTestCase) -> String? {
        let timeout = testCase.timeout
        guard let instance = session.instance(named: input.port.instance),
            let port = instance.ports.first(where: { $0.name == input.port.port && $0.direction == .source })
        else { return "\(input.port) is not a source port of this graph" }
        let body: [UInt8]
        if case .string(let text) = input.body, !input.contentType.contains("json") {
            body = Array(text.utf8)
        } else {
            body = input.body.serializedBytes()
        }
        let type = input.type ?? (port.isUntyped ? BuiltinTypes.json : port.types.first ?? BuiltinTypes.json)
        let envelope = Envelope(
            type: type, subject: input.subject, time: Int64(testCase.clock * 1e9),
            headers: Headers(input.headers.map { (name: $0.0, value: $0.1) }), contentType: input.contentType, body: body)
        // What a real source emits has one of its port's types and fits the type's schema.
        if let problem = session.refusal(of: envelope, by: port) { return "\(input.port) would not emit this envelope: \(problem)" }
        let deadline = ContinuousClock.now + timeout
        var status = instance.emit(envelope, port: port.name)
        // A full queue (`on_full: block`) takes the envelope once the graph has moved on.
        while status == 3 /* SY_ERR_FULL */, router.waitUntilQuiet(until: deadline) {
            status = instance.emit(envelope, port: port.name)
        }
        guard status == 0 else { return "the router refused the emit on \(input.port) (status \(status))" }
        guard router.waitUntilQuiet(until: deadline) else {
            return "the graph did not settle within \(timeout) (still queued, in flight or waiting to retry)"
        }
        return nil
    }
}
