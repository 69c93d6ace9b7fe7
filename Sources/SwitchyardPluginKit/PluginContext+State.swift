internal import SwitchyardABI
internal import SwitchyardBridge

/// An instance's durable key-value state, kept by the router in its store (one file, one
/// backup, owner-only permissions). Keys belong to the instance name: they survive restarts
/// and reloads. Calls write to disk: keep them off per-envelope hot paths.
public struct PluginState: Sendable {
    let context: PluginContext

    /// The value under `key`, or nil when there is none.
    public func value(forKey key: String) throws(PluginError) -> [UInt8]? {
        var collected = Collected()
        let status = withUnsafeMutablePointer(to: &collected) { target in
            var key = key
            return key.withUTF8 { keyBytes in
                context.host.pointee.state_get(
                    context.context, sy_bytes(keyBytes),
                    sy_writer(
                        target: UnsafeMutableRawPointer(target),
                        write: { target, bytes in
                            guard let target else { return SY_ERR_INVALID }
                            let collected = target.assumingMemoryBound(to: Collected.self)
                            collected.pointee.bytes.append(contentsOf: bytes.array)
                            return SY_OK
                        }))
            }
        }
        switch status {
        case SY_OK: return collected.bytes
        case SY_ERR_NOT_FOUND: return nil
        default: throw Self.error(status, "read state '\(key)'")
        }
    }

    /// Stores `value` under `key` (replacing any); durable when this returns.
    public func setValue(_ value: [UInt8], forKey key: String) throws(PluginError) {
        var key = key
        let status = key.withUTF8 { keyBytes in
            value.withUnsafeBufferPointer { valueBytes in
                context.host.pointee.state_put(context.context, sy_bytes(keyBytes), sy_bytes(valueBytes))
            }
        }
        guard status == SY_OK else { throw Self.error(status, "store state '\(key)'") }
    }

    /// Removes `key` (no error when it is absent).
    public func removeValue(forKey key: String) throws(PluginError) {
        var key = key
        let status = key.withUTF8 { context.host.pointee.state_delete(context.context, sy_bytes($0)) }
        guard status == SY_OK else { throw Self.error(status, "remove state '\(key)'") }
    }

    /// Every key that starts with `prefix`, with its value, in key order.
    public func values(withPrefix prefix: String) throws(PluginError) -> [(key: String, value: [UInt8])] {
        var collected: [(key: String, value: [UInt8])] = []
        try forEach(withPrefix: prefix) { key, value in
            collected.append((key, value))
            return true
        }
        return collected
    }

    /// Visits every key that starts with `prefix`, in key order, one entry at a time (nothing
    /// is collected: a large state is read in the memory of one value); `visit` returns false
    /// to stop early.
    public func forEach(withPrefix prefix: String, _ visit: (_ key: String, _ value: [UInt8]) -> Bool) throws(PluginError) {
        try withoutActuallyEscaping(visit) { visit throws(PluginError) in
            var visitor = visit
            var prefix = prefix
            let status = withUnsafeMutablePointer(to: &visitor) { target in
                prefix.withUTF8 { prefixBytes in
                    context.host.pointee.state_scan(
                        context.context, sy_bytes(prefixBytes),
                        { user, key, value in
                            guard let user else { return 1 }
                            let visit = user.assumingMemoryBound(to: ((String, [UInt8]) -> Bool).self).pointee
                            return visit(key.string, value.array) ? 0 : 1
                        }, UnsafeMutableRawPointer(target))
                }
            }
            guard status == SY_OK else { throw Self.error(status, "list state '\(prefix)'") }
        }
    }

    private struct Collected { var bytes: [UInt8] = [] }

    private static func error(_ status: Int32, _ what: String) -> PluginError {
        switch status {
        case SY_ERR_TOO_LARGE: PluginError("cannot \(what): the key or value is over the router's limit")
        case SY_ERR_STOPPED: PluginError("cannot \(what): the instance has stopped")
        default: PluginError("cannot \(what): the router's store failed (status \(status))")
        }
    }
}

extension PluginContext {
    /// The instance's durable key-value state.
    public var state: PluginState { PluginState(context: self) }
}
