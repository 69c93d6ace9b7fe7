package import SwitchyardABI
internal import SwitchyardBridge
public import SwitchyardCore

/// An instance's handle on the router: emit, log, metrics.
public struct PluginContext: @unchecked Sendable {
    // The host table and context are owned by the host, live for the process (the context
    // until destroy) and are documented as callable from any thread: sharing them is safe.
    let host: UnsafePointer<sy_host_api_v2>
    let context: OpaquePointer
    /// Whether a delivery was refused as full since the router last heard of room: shared by
    /// every copy of the context, so ``sinkHasRoom()`` costs one load while nothing waits.
    package let refusedAsFull: RefusedAsFull

    /// The handle of the instance `context` on the host table `host`. The SDK makes one for
    /// each instance the router creates; the package's plugin unit tests make one on a host of
    /// their own (`RecordingHost`, Tests/PluginTestSupport), so they drive a plugin without a router.
    package init(host: UnsafePointer<sy_host_api_v2>, context: OpaquePointer) {
        self.host = host
        self.context = context
        refusedAsFull = RefusedAsFull()
    }

    /// Emits an envelope on a source port. The router copies it before returning.
    @discardableResult
    public func emit(_ envelope: Envelope, on port: String, settleToken: UInt64 = 0) -> EmitResult {
        var port = port
        return port.withUTF8 { portBytes in
            EnvelopeBridge.withCEnvelope(envelope) { cEnvelope in
                let status = host.pointee.emit(context, sy_bytes(portBytes), cEnvelope, settleToken)
                return EmitResult(rawValue: status) ?? .failed
            }
        }
    }

    /// Writes a log line attributed to the instance.
    public func log(_ level: LogLevel, _ message: String) {
        var message = message
        message.withUTF8 { host.pointee.log(context, level.rawValue, sy_bytes($0)) }
    }

    /// Whether a line at `level` would be written: check it before formatting a costly one.
    public func isLogging(_ level: LogLevel) -> Bool {
        host.pointee.log_enabled(context, level.rawValue) != 0
    }

    /// Records a metric (the router prefixes it with the instance).
    public func metric(_ kind: MetricKind, _ name: String, _ value: Double) {
        var name = name
        name.withUTF8 { host.pointee.metric(context, kind.rawValue, sy_bytes($0), value) }
    }

    /// Says that `port` will emit nothing more (a timer that reached its count, input at its
    /// end), after its last emit; `run --exit-when-done` ends the router once every source its
    /// routes read is done and drained. A router that predates it ignores the call.
    public func sourceDone(_ port: String) {
        guard offers(\.source_done) else { return }
        var port = port
        port.withUTF8 { host.pointee.source_done(context, sy_bytes($0)) }
    }

    /// Says that a sink which refused a delivery as full (``SwitchyardPlugin/canAccept(on:)``
    /// was false) may have room again: call it whenever a place frees up (a confirmation came,
    /// the socket drained), after the state `canAccept` reads has changed. The router then
    /// tries again at once instead of after a pause; once a plugin has called it, the router
    /// counts on it (ABI section 5). While nothing was refused it returns after one load, so
    /// calling it on every confirmation is cheap. A router that predates it ignores the call.
    public func sinkHasRoom() {
        guard refusedAsFull.clear(), offers(\.sink_ready) else { return }
        host.pointee.sink_ready(context, sy_bytes(data: nil, length: 0))
    }

    /// Whether the host table reaches the entry at `entry` (entries added to version 2 later
    /// lie beyond an older router's `struct_size`).
    func offers<Entry>(_ entry: KeyPath<sy_host_api_v2, Entry>) -> Bool {
        guard let offset = MemoryLayout<sy_host_api_v2>.offset(of: entry) else { return false }
        return Int(host.pointee.struct_size) >= offset + MemoryLayout<Entry>.size
    }
}

/// One delivery to acknowledge.
public struct Delivery: Sendable {
    /// The router's delivery id.
    public let id: UInt64
    let context: PluginContext

    /// The delivery `id`, acknowledged through `context`: made by the SDK for each delivery from
    /// the router, and by the package's plugin unit tests for the deliveries they make up.
    package init(id: UInt64, context: PluginContext) {
        self.id = id
        self.context = context
    }

    /// Acknowledges the delivery; call exactly once.
    public func ack(_ outcome: DeliveryOutcome, reason: String = "") {
        var reason = reason
        reason.withUTF8 { context.host.pointee.ack(context.context, id, outcome.rawValue, sy_bytes($0)) }
    }
}

/// The answer to one service piece run; call exactly one of its methods once.
public struct PieceCompletion: Sendable {
    let token: UInt64
    let context: PluginContext

    init(token: UInt64, context: PluginContext) {
        self.token = token
        self.context = context
    }

    /// The run's output.
    public func succeed(_ output: JSONValue) {
        let bytes = output.serializedBytes()
        bytes.withUnsafeBufferPointer { finish(SY_OK, sy_bytes($0)) }
    }

    /// The run failed at this piece; `reason` is recorded as its error.
    public func fail(_ reason: String) {
        var reason = reason
        reason.withUTF8 { finish(SY_ERR_FAILED, sy_bytes($0)) }
    }

    private func finish(_ status: Int32, _ output: sy_bytes) {
        context.host.pointee.piece_done(context.context, token, status, output)
    }
}
