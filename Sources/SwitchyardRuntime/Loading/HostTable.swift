internal import Logging
internal import SwitchyardABI
internal import SwitchyardBridge

/// The host side of the ABI: the host tables (version 2, and version 1 for older plugins) and
/// the offer made to every plugin. All are allocated once and never freed — plugins may keep
/// pointers to them.
enum HostTable {
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
                    guard let context, let envelope else { return SY_ERR_INVALID }
                    return InstanceRuntime.from(context).emit(port: port, settleToken: token) { EnvelopeBridge.envelope(from: envelope) }
                },
                ack: { context, deliveryID, outcome, reason in HostTable.ack(context, deliveryID, outcome, reason) },
                log: { context, level, message in HostTable.log(context, level, message) },
                metric: { context, kind, name, value in HostTable.metric(context, kind, name, value) },
                piece_done: { context, token, status, output in HostTable.pieceDone(context, token, status, output) },
                log_enabled: { context, level in
                    guard let context else { return 0 }
                    return InstanceRuntime.from(context).logger.logLevel <= HostTable.logLevel(level) ? 1 : 0
                },
                state_get: { context, key, value in
                    guard let context else { return SY_ERR_INVALID }
                    return InstanceRuntime.from(context).stateGet(key: key, into: value)
                },
                state_put: { context, key, value in
                    guard let context else { return SY_ERR_INVALID }
                    return InstanceRuntime.from(context).statePut(key: key, value: value)
                },
                state_delete: { context, key in
                    guard let context else { return SY_ERR_INVALID }
                    return InstanceRuntime.from(context).stateDelete(key: key)
                },
                state_scan: { context, prefix, visit, user in
                    guard let context, let visit else { return SY_ERR_INVALID }
                    return InstanceRuntime.from(context).stateScan(prefix: prefix, visit: visit, user: user)
                }
            ))
        let versionOne = UnsafeMutablePointer<sy_host_api_v1>.allocate(capacity: 1)
        versionOne.initialize(
            to: sy_host_api_v1(
                struct_size: UInt32(MemoryLayout<sy_host_api_v1>.size),
                reserved: 0,
                emit: { context, port, envelope, token in
                    guard let context, let envelope else { return SY_ERR_INVALID }
                    return InstanceRuntime.from(context).emit(port: port, settleToken: token) { EnvelopeBridge.envelope(fromV1: envelope) }
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

    // The entries both versions share.

    static func ack(_ context: OpaquePointer?, _ deliveryID: UInt64, _ outcome: Int32, _ reason: sy_bytes) {
        guard let context else { return }
        InstanceRuntime.from(context).acknowledge(deliveryID: deliveryID, outcome: outcome, reason: reason)
    }

    static func log(_ context: OpaquePointer?, _ level: Int32, _ message: sy_bytes) {
        guard let context else { return }
        let instance = InstanceRuntime.from(context)
        let text = message.string
        let logLevel = HostTable.logLevel(level)
        guard instance.logger.logLevel <= logLevel else { return }
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

    static func metric(_ context: OpaquePointer?, _ kind: Int32, _ name: sy_bytes, _ value: Double) {
        guard let context else { return }
        let instance = InstanceRuntime.from(context)
        instance.router.record(metric: name.string, instance: instance.name, kind: kind, value: value)
    }

    static func pieceDone(_ context: OpaquePointer?, _ token: UInt64, _ status: Int32, _ output: sy_bytes) {
        guard let context else { return }
        InstanceRuntime.from(context).router.pieceDone(token: token, status: status, output: output.array)
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
