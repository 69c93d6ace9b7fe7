import Foundation
internal import Logging
internal import SwitchyardABI
internal import SwitchyardBridge
internal import SwitchyardCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One plugin instance at run time. The plugin names it on host calls with a generation-checked
/// handle (``hostContext``), never its address.
final class InstanceRuntime: Sendable {
    let name: String
    /// `[name]`: the trace of an envelope this instance emits fresh (most emits), shared so
    /// that stamping it costs a retain, not an array.
    let traceOfItself: [String]
    let plugin: LoadedPlugin
    /// The configuration it runs with; a reload that the plugin's reconfigure() adopted
    /// replaces it.
    var config: JSONValue {
        get { adoptedConfig.withLock { $0 } }
        set { adoptedConfig.withLock { $0 = newValue } }
    }
    private let adoptedConfig: Mutex<JSONValue>
    /// The plugin's instance, from its create() until destroy(): read on every delivery, so an
    /// atomic (a plain load on x86) rather than a lock. Kept as its address, which is
    /// `Sendable`; the plugin owns what it points to.
    var handle: UnsafeMutableRawPointer? {
        get { UnsafeMutableRawPointer(bitPattern: instanceHandle.load(ordering: .acquiring)) }
        set { instanceHandle.store(UInt(bitPattern: newValue), ordering: .releasing) }
    }
    private let instanceHandle = Atomic<UInt>(0)
    /// Its source ports, each with the routes that read from it.
    let sources: [SourcePort]
    let counters = InstanceCounters()
    /// Whether it takes deliveries; ``stopAccepting()`` turns it off.
    let accepting = Atomic<Bool>(true)
    /// When its full sinks are worth trying again (ABI `sink_ready`).
    let sinkRoom: SinkRoom
    /// Whether, with a shared store, one router at a time runs it (`exclusive: true`).
    let exclusive: Bool
    /// Its sink ports whose `deliver` may run on the emitting thread (the description's
    /// `delivers_inline`), as described when the instance was created.
    let inlineSinkPorts: Set<String>
    /// Set while the instance is created but not started, because another router holds it:
    /// deliveries are answered "stopped" (kept and tried again, as for a full sink).
    let standingBy = Atomic<Bool>(false)
    private let stopCalled = Atomic<Bool>(false)
    /// The holds the plugin asked for (ABI `hold_acquire`).
    let pluginHolds = PluginHolds()
    /// Deliveries outside routes (the admin API's inject): ``stopPlugin()`` closes it and waits
    /// for those in progress, as routes are stopped before it by the worker pool.
    let directDeliveries = DirectDeliveryGate()
    /// The plugin's durable state (ABI `state_*`).
    let pluginState: InstanceStateService
    let logger: Logger
    /// Bounds the lines the plugin's `log` calls may write (a flood of peer errors).
    let logThrottle = Mutex(LogThrottle())
    unowned let router: Router
    /// The router's tracing (nil when off), kept here so emit and ack test a field of their own
    /// rather than load the unowned router first.
    let tracing: RouterTracing?

    init(
        name: String, plugin: LoadedPlugin, config: JSONValue, logLevel: String?, exclusive: Bool = false, sources: [SourcePort] = [],
        inlineSinkPorts: Set<String> = [], router: Router, logger: Logger
    ) {
        self.name = name
        self.inlineSinkPorts = inlineSinkPorts
        traceOfItself = [name]
        self.exclusive = exclusive
        self.plugin = plugin
        adoptedConfig = Mutex(config)
        self.sources = sources
        self.router = router
        tracing = router.tracing
        sinkRoom = SinkRoom(safetyPause: router.sinkSafetyPause)
        var logger = logger
        logger[metadataKey: "instance"] = .string(name)
        if let level = logLevel.flatMap(Logger.Level.init(rawValue:)) { logger.logLevel = level }
        self.logger = logger
        pluginState = InstanceStateService(instance: name, router: router, logger: logger)
    }

    /// The handle the plugin passes back on host calls (see ``HostContextTable``); set by
    /// ``openHostContext()`` before create and read-only afterwards.
    var hostContext: OpaquePointer? { OpaquePointer(bitPattern: registeredContext.load(ordering: .acquiring)) }
    private let registeredContext = Atomic<UInt>(0)

    /// Registers the instance for host calls; the handle to give the plugin's create(), or
    /// nil when the table of live instances is full.
    func openHostContext() -> OpaquePointer? {
        if let hostContext { return hostContext }
        let registered = HostContextTable.shared.register(self, record: LateCallRecord(name: name, router: router))
        registeredContext.store(UInt(bitPattern: registered), ordering: .releasing)
        return registered
    }

    /// Refuses every later host call of the plugin for this instance (they return
    /// SY_ERR_STOPPED and are counted) and waits for the calls in progress to end.
    func retireHostContext() {
        if let hostContext { HostContextTable.shared.retire(hostContext) }
    }

    /// Calls the plugin's stop() and then retires the host context: from then on the plugin
    /// may not call the host for this instance (ABI section 4).
    func stopPlugin() {
        // Once: a router that lost an exclusive instance's hold stops it at once, then again
        // with every instance when it shuts down.
        guard !stopCalled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pluginHolds.close(releasing: false)
        stopAccepting()
        directDeliveries.close()
        if let handle { plugin.table.api.stop?(handle) }
        retireHostContext()
        pluginHolds.close(releasing: true)
    }

    /// Takes no more deliveries: routes waiting for one of its full sinks stop waiting (and
    /// give the delivery up, or keep it in the spool).
    func stopAccepting() {
        accepting.store(false, ordering: .relaxed)
        sinkRoom.signal(fromPlugin: false)
        router.workerPool.retryNow(waitingFor: self)
    }

    /// The plugin says a full sink port has room again (ABI `sink_ready`): the routes waiting
    /// for one of its sinks try again now.
    func sinkReady() {
        sinkRoom.signal(fromPlugin: true)
        router.workerPool.retryNow(waitingFor: self)
    }

    /// Calls the plugin's destroy() (after ``stopPlugin()``).
    func destroyPlugin() {
        if let handle { plugin.table.api.destroy?(handle) }
        handle = nil
    }

    func sourcePort(matching bytes: sy_bytes) -> SourcePort? {
        for port in sources where port.nameBytes.count == bytes.length {
            let equal = port.nameBytes.withUnsafeBufferPointer { own in
                guard bytes.length > 0 else { return true }
                guard let base = own.baseAddress, let data = bytes.data else { return false }
                return memcmp(base, data, bytes.length) == 0
            }
            if equal { return port }
        }
        return nil
    }

    /// Deliveries each sink port took, by port name; entries are added while routes are
    /// wired, the counters are atomic.
    private let sinkCounters = Mutex<[String: SinkPortCounter]>([:])

    /// The counter of sink port `name` (made on first use).
    func sinkCounter(_ name: String) -> SinkPortCounter {
        sinkCounters.withLock { counters in
            if let counter = counters[name] { return counter }
            let counter = SinkPortCounter()
            counters[name] = counter
            return counter
        }
    }

    /// Per-port counts: emitted per source port, taken per sink port.
    var portCounts: [(port: String, direction: String, count: Int)] {
        sources.map { ($0.name, "source", $0.emitted.load(ordering: .relaxed)) }
            + sinkCounters.withLock { $0 }.sorted { $0.key < $1.key }.map { ($0.key, "sink", $0.value.taken.load(ordering: .relaxed)) }
    }

    func deliver(_ envelope: Envelope, port: SinkPort, deliveryID: UInt64) -> Int32 {
        guard let handle, let deliver = plugin.table.api.deliver, !standingBy.load(ordering: .relaxed) else { return SY_ERR_STOPPED }
        counters.inFlight.add(1, ordering: .relaxed)
        let status = port.nameBytes.withUnsafeBufferPointer { portBuffer in
            EnvelopeBridge.withCEnvelope(envelope) { cEnvelope in
                deliver(handle, sy_bytes(portBuffer), plugin.table.envelopeForPlugin(cEnvelope), deliveryID)
            }
        }
        if status == SY_OK {
            port.counter.taken.add(1, ordering: .relaxed)
        } else {
            deliveryEnded()
        }
        return status
    }

    /// One delivery fewer in flight; the one that empties the instance wakes whoever drains the
    /// router (a shutdown, or a reload waiting for this instance: both wait on the router's
    /// ``WakeSignal``).
    private func deliveryEnded() {
        if counters.inFlight.subtract(1, ordering: .sequentiallyConsistent).newValue == 0 { router.drainProgress.signal() }
    }

    /// The host's `ack`.
    func acknowledge(deliveryID: UInt64, outcome: Int32, reason: sy_bytes) {
        if let tracing { tracing.acknowledged(deliveryID, outcome: outcome, reason: reason) }
        // The in-flight count drops last, after the source is told (settled): a shutdown that
        // sees it reach zero and stops the source must find the source's confirmation already
        // handed over (an MQTT PUBACK queued before the DISCONNECT).
        defer { deliveryEnded() }
        if outcome == SY_OUTCOME_OK {
            counters.acknowledged.add(1, ordering: .relaxed)
        } else {
            let failures = counters.failed.add(1, ordering: .relaxed).newValue
            // The first failures are worth a line each; a flood is visible in the counters.
            if failures <= 10 || failures.isMultiple(of: 1000) {
                logger.warning(
                    "delivery failed",
                    metadata: [
                        "outcome": .string(outcome == SY_OUTCOME_RETRY ? "retry" : "reject"), "reason": .string(reason.string),
                        "failures": .stringConvertible(failures),
                    ]
                )
            }
        }
        router.deliveries.finished(deliveryID, outcome: outcome, reason: reason)
    }

    /// Tells the plugin a settle token is settled.
    func settled(token: UInt64, outcome: Int32) {
        guard let handle, let settled = plugin.table.api.settled else { return }
        settled(handle, token, outcome)
    }

    func resume(port: String) {
        guard let handle, let resume = plugin.table.api.resume, accepting.load(ordering: .relaxed) else { return }
        var name = port
        name.withUTF8 { resume(handle, sy_bytes($0)) }
    }
}
