import Foundation
internal import Logging
internal import SwitchyardABI
internal import SwitchyardCore
import Synchronization

/// Drives the life cycle of plugin instances (ABI section 4): create, start, reconfigure,
/// quiesce, wait for their deliveries, stop and destroy. Every call runs on the control thread
/// (start, reload, shutdown), one at a time; the router's reload lock serialises them.
struct InstanceSupervisor: Sendable {
    let logger: Logger

    /// What an instance answered when offered a changed configuration.
    enum Reconfiguration: Equatable {
        /// It now runs with the new configuration (SY_OK).
        case adopted
        /// It cannot adopt this change in place (SY_ERR_UNSUPPORTED, or no reconfigure entry):
        /// it must be stopped and a new one started.
        case needsRestart
        /// It refused the configuration (any other code): the reload must roll back.
        case refused(String)
    }

    /// Calls the plugin's create() with the instance's configuration.
    func create(_ instance: InstanceRuntime) throws(RouterError) {
        guard let create = instance.plugin.table.api.create else {
            throw RouterError(instance: instance.name, reason: "plugin has no create")
        }
        guard let context = instance.openHostContext() else {
            throw RouterError(instance: instance.name, reason: "create failed: too many plugin instances in this process")
        }
        var configBytes = instance.config.serializedBytes()
        var name = instance.name
        var handle: UnsafeMutableRawPointer?
        let (status, message) = Self.withErrorBuffer { error in
            configBytes.withUnsafeBufferPointer { configBuffer in
                name.withUTF8 { nameBuffer in create(context, sy_bytes(nameBuffer), sy_bytes(configBuffer), &handle, error) }
            }
        }
        configBytes.removeAll()
        guard status == SY_OK, let handle else {
            instance.retireHostContext()
            throw RouterError(instance: instance.name, reason: "create failed: \(message.isEmpty ? "status \(status)" : message)")
        }
        instance.handle = handle
    }

    /// Calls the plugin's start().
    func start(_ instance: InstanceRuntime) throws(RouterError) {
        guard let handle = instance.handle, let start = instance.plugin.table.api.start else { return }
        let (status, message) = Self.withErrorBuffer { error in start(handle, error) }
        guard status == SY_OK else {
            throw RouterError(instance: instance.name, reason: "start failed: \(message.isEmpty ? "status \(status)" : message)")
        }
        logger.debug("instance started", metadata: ["instance": .string(instance.name), "plugin": .string(instance.plugin.manifest.name)])
    }

    /// Starts instances that only receive first, so early emits find their sinks ready.
    /// Stops at the first failure; `started` then holds those that did start.
    func startInOrder(_ instances: [InstanceRuntime], started: inout [InstanceRuntime]) throws(RouterError) {
        let order =
            instances.filter { $0.sources.allSatisfy { $0.routes.isEmpty } }
            + instances.filter { $0.sources.contains { !$0.routes.isEmpty } }
        for instance in order {
            try start(instance)
            started.append(instance)
        }
    }

    /// Offers a running instance `config` (ABI section 7). Nothing changed unless the answer is
    /// ``Reconfiguration/adopted``; then the instance records its new configuration.
    func reconfigure(_ instance: InstanceRuntime, to config: JSONValue) -> Reconfiguration {
        guard let handle = instance.handle, let reconfigure = instance.plugin.table.api.reconfigure else { return .needsRestart }
        var configBytes = config.serializedBytes()
        let (status, message) = Self.withErrorBuffer { error in
            configBytes.withUnsafeBufferPointer { reconfigure(handle, sy_bytes($0), error) }
        }
        configBytes.removeAll()
        switch status {
        case SY_OK:
            instance.config = config
            return .adopted
        case SY_ERR_UNSUPPORTED: return .needsRestart
        default: return .refused("reconfigure refused the new configuration: \(message.isEmpty ? "status \(status)" : message)")
        }
    }

    /// Tells the instance's sources to stop producing (deliveries continue).
    func quiesce(_ instance: InstanceRuntime) {
        // One standing by never started (header section 4: it is not quiesced).
        guard !instance.standingBy.load(ordering: .relaxed) else { return }
        if let handle = instance.handle { instance.plugin.table.api.quiesce?(handle) }
    }

    /// Waits until none of `instances` has a delivery unacknowledged, or `deadline` passes;
    /// woken by the acknowledgements themselves, not by polling. Returns the instances still
    /// busy at the deadline.
    func awaitIdle(_ instances: [InstanceRuntime], until deadline: ContinuousClock.Instant) -> [InstanceRuntime] {
        instances.filter { instance in
            !instance.router.drainProgress.wait(until: deadline) {
                instance.counters.inFlight.load(ordering: .sequentiallyConsistent) > 0
            }
        }
    }

    /// Stops the instance (its host calls are refused from then on) and frees it; nothing
    /// when it was already.
    func stopAndDestroy(_ instance: InstanceRuntime) {
        guard instance.handle != nil else { return }
        instance.stopPlugin()
        instance.destroyPlugin()
    }

    /// Runs `body` with an error buffer for the plugin; returns its status and the message.
    private static func withErrorBuffer(_ body: (sy_error_buffer) -> Int32) -> (status: Int32, message: String) {
        var errorBytes = [UInt8](repeating: 0, count: 1024)
        var errorLength = 0
        let status = errorBytes.withUnsafeMutableBufferPointer { errorBuffer in
            withUnsafeMutablePointer(to: &errorLength) { lengthPointer in
                body(sy_error_buffer(data: errorBuffer.baseAddress, capacity: errorBuffer.count, length: lengthPointer))
            }
        }
        return (status, String(decoding: errorBytes.prefix(min(max(errorLength, 0), errorBytes.count)), as: UTF8.self))
    }
}
