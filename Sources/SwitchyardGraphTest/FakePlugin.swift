internal import SwitchyardABI
internal import SwitchyardBridge
internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRuntime
import Synchronization

/// The plugin every instance of a graph under `switchyard test` runs as: a C ABI table written
/// in Swift that exposes the real plugin's manifest (the ``LoadedPlugin`` keeps its manifest,
/// schema and path) but never runs its code. Its instances emit what a test injects, through
/// the host's own `emit`, and capture what the router delivers to their sinks, checking each
/// envelope against the port's types and the type's schema as a real sink would.
enum FakePlugin {
    /// A copy of `real` whose entries are the fake's.
    static func standIn(for real: LoadedPlugin) -> LoadedPlugin {
        LoadedPlugin(
            path: real.path, abiVersion: SY_ABI_VERSION_2, manifest: real.manifest, configSchema: real.configSchema,
            table: table)
    }

    /// The stand-in instance that answers for every `http` service piece (the real piece would
    /// call out): its service port `http` answers with the test's `services: {IIIDEA: …}`.
    static let httpInstance = "switchyard-test-http"

    /// The plugin of ``httpInstance``: one service port.
    static let httpStandIn: LoadedPlugin? = {
        let manifest = #"{"name": "switchyard-test", "version": "1", "ports": [{"name": "http", "direction": "service", "types": ["*"]}]}"#
        guard let parsed = try? PluginManifest(parsing: Array(manifest.utf8)), let schema = try? Schema(json: parsed.config) else {
            return nil
        }
        return LoadedPlugin(path: "(switchyard test)", abiVersion: SY_ABI_VERSION_2, manifest: parsed, configSchema: schema, table: table)
    }()

    /// `plan` with every `http` service piece answered by ``httpInstance`` instead.
    static func withoutHTTP(_ plan: GraphPlan, config: JSONValue) -> GraphPlan {
        var plan = plan
        var replaced = false
        for index in plan.iiideas.indices {
            guard case .http(_, let timeout, _, _) = plan.iiideas[index].service else { continue }
            plan.iiideas[index].service = .plugin(PortReference(instance: httpInstance, port: "http"), preferences: .null, timeout: timeout)
            replaced = true
        }
        guard replaced, let plugin = httpStandIn else { return plan }
        plan.instances.append(
            PlannedInstance(
                name: httpInstance, plugin: plugin, config: config, ports: plugin.manifest.ports, declaredPorts: plugin.manifest.ports,
                location: SourceLocation(file: "(switchyard test)", line: 1, column: 1)))
        return plan
    }

    /// The configuration a stand-in instance is created with: which session it belongs to.
    static func config(session: UInt64) -> JSONValue { ["switchyard_test_session": .int(Int(truncatingIfNeeded: session))] }

    /// The host's version 2 table: what a real plugin calls.
    static var host: sy_host_api_v2 { HostTable.versionTwo }

    static let table: PluginTable = {
        var api = sy_plugin_api_v2()
        api.struct_size = UInt32(MemoryLayout<sy_plugin_api_v2>.size)
        api.create = { context, name, config, instance, error in
            guard let instance else { return SY_ERR_INVALID }
            let session = (try? JSONValue(parsing: config.array))?.objectValue?["switchyard_test_session"]?.intValue
            guard let session, let owner = GraphTestSessions.shared.session(UInt64(truncatingIfNeeded: session)),
                let fake = owner.makeInstance(name.string, context: context)
            else {
                error.write("not an instance of a switchyard test session")
                return SY_ERR_INVALID
            }
            instance.pointee = Unmanaged.passRetained(fake).toOpaque()
            return SY_OK
        }
        api.start = { _, _ in SY_OK }
        api.stop = { _ in }
        api.destroy = { instance in
            guard let instance else { return }
            Unmanaged<FakeInstance>.fromOpaque(instance).release()
        }
        api.deliver = { instance, port, envelope, deliveryID in
            guard let instance, let envelope, let read = EnvelopeBridge.envelope(from: envelope) else { return SY_ERR_INVALID }
            return Unmanaged<FakeInstance>.fromOpaque(instance).takeUnretainedValue().deliver(read, port: port.string, id: deliveryID)
        }
        api.piece_execute = { instance, port, iiidea, input, _, token in
            guard let instance else { return SY_ERR_INVALID }
            let fake = Unmanaged<FakeInstance>.fromOpaque(instance).takeUnretainedValue()
            let value = (try? JSONValue(parsing: input.array)) ?? .null
            return fake.execute(port: port.string, iiidea: iiidea.string, input: value, token: token)
        }
        return PluginTable(api: api, version: SY_ABI_VERSION_2)
    }()
}

extension sy_error_buffer {
    /// Writes `message` (cut to the capacity) into the host's buffer.
    func write(_ message: String) {
        guard let data, let length else { return }
        let bytes = Array(message.utf8.prefix(capacity))
        for (offset, byte) in bytes.enumerated() { data[offset] = byte }
        length.pointee = bytes.count
    }
}

/// One stand-in instance: its ports, and the session it reports to.
final class FakeInstance: Sendable {
    let name: String
    /// The host context create() was given, as a bit pattern (the handle is never dereferenced).
    private let context: UInt
    /// The ports its configuration enables (the real plugin's description).
    let ports: [PortDeclaration]
    unowned let session: GraphTestSession

    init(name: String, context: OpaquePointer?, ports: [PortDeclaration], session: GraphTestSession) {
        self.name = name
        self.context = UInt(bitPattern: context)
        self.ports = ports
        self.session = session
    }

    private var hostContext: OpaquePointer? { OpaquePointer(bitPattern: context) }

    /// Emits `envelope` on source port `port` through the host's `emit`.
    func emit(_ envelope: Envelope, port: String) -> Int32 {
        guard let emit = FakePlugin.host.emit else { return SY_ERR_FAILED }
        var portName = port
        return portName.withUTF8 { portBytes in
            EnvelopeBridge.withCEnvelope(envelope) { emit(hostContext, sy_bytes(portBytes), $0, 0) }
        }
    }

    /// A delivery: checked against the port as the real plugin's manifest declares it, recorded,
    /// and acknowledged as the test's sink behaviour says.
    func deliver(_ envelope: Envelope, port: String, id: UInt64) -> Int32 {
        let qualified = name + "." + port
        guard let declared = ports.first(where: { $0.name == port && $0.direction == .sink }) else { return SY_ERR_UNKNOWN_PORT }
        if let refusal = session.refusal(of: envelope, by: declared) {
            session.record(.init(port: qualified, envelope: envelope, outcome: .refusedInvalid(refusal)))
            return SY_ERR_INVALID
        }
        let behaviour = session.behaviour(of: qualified)
        switch behaviour {
        case .refuse:
            session.record(.init(port: qualified, envelope: envelope, outcome: .refusedByTest))
            return SY_ERR_INVALID
        case .fail:
            session.record(.init(port: qualified, envelope: envelope, outcome: .failed))
            return SY_ERR_FAILED
        case .accept, .reject, .retry:
            let outcome: Int32 = behaviour == .accept ? SY_OUTCOME_OK : behaviour == .reject ? SY_OUTCOME_REJECT : SY_OUTCOME_RETRY
            session.record(.init(port: qualified, envelope: envelope, outcome: behaviour == .accept ? .taken : .acknowledged(outcome)))
            var reason = behaviour == .accept ? "" : "the test's sink answers \(behaviour.rawValue)"
            reason.withUTF8 { FakePlugin.host.ack?(hostContext, id, outcome, sy_bytes($0)) }
            return SY_OK
        }
    }

    /// A service piece run: the test's answer for the port, else the input unchanged.
    func execute(port: String, iiidea: String, input: JSONValue, token: UInt64) -> Int32 {
        let output = session.serviceOutput(of: name == FakePlugin.httpInstance ? iiidea : name + "." + port, input: input)
        let bytes = output.serializedBytes()
        bytes.withUnsafeBufferPointer { FakePlugin.host.piece_done?(hostContext, token, SY_OK, sy_bytes($0)) }
        return SY_OK
    }
}

/// The sessions whose instances are being created, by id: how the fake's create() (a C
/// function, which captures nothing) finds its session.
final class GraphTestSessions: Sendable {
    static let shared = GraphTestSessions()
    private let sessions = Mutex<[UInt64: GraphTestSession]>([:])
    private let counter = Atomic<UInt64>(0)

    /// A new session id; the session is registered under it once its plan is made.
    func reserve() -> UInt64 { counter.add(1, ordering: .relaxed).newValue }

    func register(_ session: GraphTestSession, as id: UInt64) { sessions.withLock { $0[id] = session } }

    func remove(_ id: UInt64) { sessions.withLock { _ = $0.removeValue(forKey: id) } }

    func session(_ id: UInt64) -> GraphTestSession? { sessions.withLock { $0[id] } }
}
