internal import Logging
package import SwitchyardABI
internal import SwitchyardBridge

/// The host side of the ABI: the host tables (version 2, and version 1 for older plugins) and
/// the offer made to every plugin. All are allocated once and never freed — plugins may keep
/// pointers to them.
package enum HostTable {
    struct Offer: @unchecked Sendable {
        // Immutable, process-lifetime allocations.
        let pointer: UnsafeMutablePointer<sy_offer>

        func withOffer<Result>(_ body: (UnsafePointer<sy_offer>) -> Result) -> Result { body(UnsafePointer(pointer)) }
    }

    static let offer: Offer = {
        let versionTwo = UnsafeMutablePointer<sy_host_api_v2>.allocate(capacity: 1)
        versionTwo.initialize(
            to: sy_host_api_v2(
                struct_size: UInt32(MemoryLayout<sy_host_api_v2>.size),
                reserved: 0,
                emit: { context, port, envelope, token in
                    guard let envelope else { return SY_ERR_INVALID }
                    return HostTable.call(context, refused: SY_ERR_STOPPED) {
                        $0.emit(port: port, settleToken: token) { EnvelopeBridge.envelope(from: envelope) }
                    }
                },
                ack: { context, deliveryID, outcome, reason in HostTable.ack(context, deliveryID, outcome, reason) },
                log: { context, level, message in HostTable.log(context, level, message) },
                metric: { context, kind, name, value in HostTable.metric(context, kind, name, value) },
                piece_done: { context, token, status, output in HostTable.pieceDone(context, token, status, output) },
                log_enabled: { context, level in
                    HostTable.call(context, refused: 0, invalid: 0) { HostTable.isLogging($0, HostTable.logLevel(level)) ? 1 : 0 }
                },
                state_get: { context, key, value in
                    HostTable.call(context, refused: SY_ERR_STOPPED) { $0.pluginState.get(key: key, into: value) }
                },
                state_put: { context, key, value in
                    HostTable.call(context, refused: SY_ERR_STOPPED) { $0.pluginState.put(key: key, value: value) }
                },
                state_delete: { context, key in
                    HostTable.call(context, refused: SY_ERR_STOPPED) { $0.pluginState.delete(key: key) }
                },
                state_scan: { context, prefix, visit, user in
                    guard let visit else { return SY_ERR_INVALID }
                    return HostTable.call(context, refused: SY_ERR_STOPPED) {
                        $0.pluginState.scan(prefix: prefix, visit: visit, user: user)
                    }
                },
                hold_acquire: { context, name, changed, user, holdID in
                    guard let changed, let holdID else { return SY_ERR_INVALID }
                    return HostTable.call(context, refused: SY_ERR_STOPPED) {
                        $0.pluginHolds.acquire(
                            name, of: $0.name, in: $0.router.pluginHolds, changed: changed, user: user, holdID: holdID)
                    }
                },
                hold_release: { context, holdID in
                    HostTable.call(context) { $0.pluginHolds.release(holdID) }
                },
                source_done: { context, port in
                    HostTable.call(context) { $0.router.sourceDone(instance: $0.name, port: port.string) }
                },
                // Any port of the instance: a route waiting for one of its sinks tries again.
                sink_ready: { context, _ in HostTable.call(context) { $0.sinkReady() } }
            ))
        let versionOne = UnsafeMutablePointer<sy_host_api_v1>.allocate(capacity: 1)
        versionOne.initialize(
            to: sy_host_api_v1(
                struct_size: UInt32(MemoryLayout<sy_host_api_v1>.size),
                reserved: 0,
                emit: { context, port, envelope, token in
                    guard let envelope else { return SY_ERR_INVALID }
                    return HostTable.call(context, refused: SY_ERR_STOPPED) {
                        $0.emit(port: port, settleToken: token) { EnvelopeBridge.envelope(fromV1: envelope) }
                    }
                },
                ack: { context, deliveryID, outcome, reason in HostTable.ack(context, deliveryID, outcome, reason) },
                log: { context, level, message in HostTable.log(context, level, message) },
                metric: { context, kind, name, value in HostTable.metric(context, kind, name, value) },
                piece_done: { context, token, status, output in HostTable.pieceDone(context, token, status, output) }
            ))
        let versions = UnsafeMutablePointer<UInt32>.allocate(capacity: 2)
        versions.initialize(from: [SY_ABI_VERSION_2, SY_ABI_VERSION_1], count: 2)
        let tables = UnsafeMutablePointer<UnsafeRawPointer?>.allocate(capacity: 2)
        tables.initialize(from: [UnsafeRawPointer(versionTwo), UnsafeRawPointer(versionOne)], count: 2)
        let offer = UnsafeMutablePointer<sy_offer>.allocate(capacity: 1)
        offer.initialize(
            to: sy_offer(
                struct_size: UInt32(MemoryLayout<sy_offer>.size),
                version_count: 2,
                versions: UnsafePointer(versions),
                host_tables: UnsafePointer(tables)
            ))
        return Offer(pointer: offer)
    }()

    /// Runs `body` with the live instance `context` names (see ``HostContextTable``): a call
    /// after the instance's stop() returned gets `refused` and is counted, a null or malformed
    /// handle `invalid`.
    @inline(__always)
    static func call<Result>(
        _ context: OpaquePointer?, refused: Result, invalid: Result, _ body: (InstanceRuntime) -> Result
    ) -> Result {
        HostContextTable.shared.withInstance(context, stopped: refused, invalid: invalid, body)
    }

    @inline(__always)
    static func call(_ context: OpaquePointer?, refused: Int32, _ body: (InstanceRuntime) -> Int32) -> Int32 {
        call(context, refused: refused, invalid: SY_ERR_INVALID, body)
    }

    @inline(__always)
    static func call(_ context: OpaquePointer?, _ body: (InstanceRuntime) -> Void) {
        call(context, refused: (), invalid: (), body)
    }

    // The entries both versions share.

    static func ack(_ context: OpaquePointer?, _ deliveryID: UInt64, _ outcome: Int32, _ reason: sy_bytes) {
        call(context) { $0.acknowledge(deliveryID: deliveryID, outcome: outcome, reason: reason) }
    }

    static func log(_ context: OpaquePointer?, _ level: Int32, _ message: sy_bytes) {
        call(context) { log(instance: $0, level, message) }
    }

    private static func log(instance: InstanceRuntime, _ level: Int32, _ message: sy_bytes) {
        let logLevel = HostTable.logLevel(level)
        guard isLogging(instance, logLevel) else { return }
        let text = message.string
        switch instance.logThrottle.withLock({ $0.admit(text) }) {
        case .suppress:
            instance.router.record(metric: "log_lines_suppressed_total", instance: instance.name, kind: SY_METRIC_COUNTER, value: 1)
            return
        case .summarizeThenWrite(let count, let first):
            instance.logger.warning(
                "\(count) log lines of this instance were held back (more than \(LogThrottle.budget) in \(LogThrottle.window)); the first: \(first)"
            )
        case .write:
            break
        }
        instance.logger.log(level: logLevel, "\(text)")
        if logLevel >= .warning { instance.router.note(problem: text, instance: instance.name) }
    }

    /// Whether the instance's logger writes lines at `level`: what `log` checks before it
    /// copies the message, and what `log_enabled` answers.
    private static func isLogging(_ instance: InstanceRuntime, _ level: Logger.Level) -> Bool {
        instance.logger.logLevel <= level
    }

    static func metric(_ context: OpaquePointer?, _ kind: Int32, _ name: sy_bytes, _ value: Double) {
        call(context) { $0.router.record(metric: name.string, instance: $0.name, kind: kind, value: value) }
    }

    static func pieceDone(_ context: OpaquePointer?, _ token: UInt64, _ status: Int32, _ output: sy_bytes) {
        call(context) { $0.router.iiideaEngine?.pieceDone(token: token, status: status, output: output.array) }
    }

    static func logLevel(_ level: Int32) -> Logger.Level {
        switch level {
        case SY_LOG_TRACE: .trace
        case SY_LOG_DEBUG: .debug
        case SY_LOG_INFO: .info
        case SY_LOG_NOTICE: .notice
        case SY_LOG_WARNING: .warning
        case SY_LOG_ERROR: .error
        default: .critical
        }
    }
}

extension HostTable {
    /// The version 2 host table every plugin is offered: what `switchyard test`'s stand-in
    /// plugin calls, as a real plugin would. Plain C function pointers, never changed.
    package static var versionTwo: sy_host_api_v2 {
        // The offer lists version 2 first (see `offer`), always present.
        offer.withOffer { offer in
            offer.pointee.host_tables[0].map { $0.assumingMemoryBound(to: sy_host_api_v2.self).pointee } ?? sy_host_api_v2()
        }
    }
}
