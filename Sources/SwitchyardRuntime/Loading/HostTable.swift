internal import Logging
internal import SwitchyardABI
internal import SwitchyardBridge

/// The host side of the ABI: the version-1 host table and the offer made to every plugin.
/// Both are allocated once and never freed — plugins may keep pointers to them.
enum HostTable {
    struct Offer: @unchecked Sendable {
        // Immutable, process-lifetime allocations.
        let pointer: UnsafeMutablePointer<sy_offer>

        func withOffer<Result>(_ body: (UnsafePointer<sy_offer>) -> Result) -> Result { body(UnsafePointer(pointer)) }
    }

    static let offer: Offer = {
        let table = UnsafeMutablePointer<sy_host_api_v1>.allocate(capacity: 1)
        table.initialize(
            to: sy_host_api_v1(
                struct_size: UInt32(MemoryLayout<sy_host_api_v1>.size),
                reserved: 0,
                emit: { context, port, envelope, token in
                    guard let context, let envelope else { return SY_ERR_INVALID }
                    return InstanceRuntime.from(context).emit(port: port, envelope: envelope, settleToken: token)
                },
                ack: { context, deliveryID, outcome, reason in
                    guard let context else { return }
                    InstanceRuntime.from(context).acknowledge(deliveryID: deliveryID, outcome: outcome, reason: reason)
                },
                log: { context, level, message in
                    guard let context else { return }
                    let instance = InstanceRuntime.from(context)
                    let text = message.string
                    let logLevel = HostTable.logLevel(level)
                    guard instance.logger.logLevel <= logLevel else { return }
                    switch instance.logThrottle.withLock({ $0.admit(text) }) {
                    case .suppress:
                        instance.router.record(
                            metric: "log_lines_suppressed_total", instance: instance.name, kind: SY_METRIC_COUNTER, value: 1)
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
                },
                metric: { context, kind, name, value in
                    guard let context else { return }
                    let instance = InstanceRuntime.from(context)
                    instance.router.record(metric: name.string, instance: instance.name, kind: kind, value: value)
                },
                piece_done: { context, token, status, output in
                    guard let context else { return }
                    InstanceRuntime.from(context).router.pieceDone(token: token, status: status, output: output.array)
                }
            ))
        let versions = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        versions.initialize(to: SY_ABI_VERSION_1)
        let tables = UnsafeMutablePointer<UnsafeRawPointer?>.allocate(capacity: 1)
        tables.initialize(to: UnsafeRawPointer(table))
        let offer = UnsafeMutablePointer<sy_offer>.allocate(capacity: 1)
        offer.initialize(
            to: sy_offer(
                struct_size: UInt32(MemoryLayout<sy_offer>.size),
                version_count: 1,
                versions: UnsafePointer(versions),
                host_tables: UnsafePointer(tables)
            ))
        return Offer(pointer: offer)
    }()

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
