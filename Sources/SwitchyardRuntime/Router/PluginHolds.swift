internal import SwitchyardABI
internal import SwitchyardBridge
internal import SwitchyardStore
import Synchronization

/// The plugin's callback for one hold, called only until the hold is released or lost: a
/// release waits for a callback in progress, so none runs once it has returned (ABI section 10).
final class PluginHoldGate: Sendable {
    /// The plugin's pointer, passed back untouched: the plugin owns what it points to.
    private struct Callback: @unchecked Sendable {
        let changed: sy_hold_callback
        let user: UnsafeMutableRawPointer?
    }

    private let callback: Mutex<Callback?>

    init(changed: sy_hold_callback, user: UnsafeMutableRawPointer?) {
        callback = Mutex(Callback(changed: changed, user: user))
    }

    /// Tells the plugin; a loss is the last thing it hears.
    func tell(held: Bool) {
        callback.withLock { callback in
            guard let current = callback else { return }
            current.changed(current.user, held ? 1 : 0)
            if !held { callback = nil }
        }
    }

    /// No call from now on (and none in progress when it returns).
    func close() {
        callback.withLock { $0 = nil }
    }
}

/// The holds one plugin instance asked for (the host's hold service, ABI section 10), by the
/// id the plugin knows them by: named locks in the shared store when there is one (PostgreSQL
/// advisory locks, see PostgresStore+Holds), else in the router. A name is the instance's own:
/// two instances never contend, and the same instance on two routers does.
final class PluginHolds: Sendable {
    private struct Table {
        var nextID: UInt64 = 0
        var holds: [UInt64: (hold: any ListenerHold, gate: PluginHoldGate)] = [:]
        /// Set once the instance stops: nothing more is granted or kept.
        var closed = false
    }

    private let table = Mutex(Table())

    /// Asks `engine` for the hold `name` of `instance`; the plugin hears of it through
    /// `changed(user, …)`. SY_ERR_STOPPED once the instance stops.
    func acquire(
        _ name: sy_bytes, of instance: String, in engine: any ListenerHolds, changed: sy_hold_callback, user: UnsafeMutableRawPointer?,
        holdID: UnsafeMutablePointer<UInt64>
    ) -> Int32 {
        guard name.length > 0, name.length <= PluginStateLimits.maximumKey, name.data != nil else {
            return name.length > PluginStateLimits.maximumKey ? SY_ERR_TOO_LARGE : SY_ERR_INVALID
        }
        let gate = PluginHoldGate(changed: changed, user: user)
        // Reserved before the claim exists: a grant may come before hold() returns.
        let id = table.withLock { table in
            table.nextID &+= 1
            return table.nextID
        }
        holdID.pointee = id
        let hold = engine.hold("plugin \(instance) \(name.string)", granted: { gate.tell(held: true) }, lost: { gate.tell(held: false) })
        let kept = table.withLock { table in
            guard !table.closed else { return false }
            table.holds[id] = (hold, gate)
            return true
        }
        if !kept {
            gate.close()
            hold.release()
            return SY_ERR_STOPPED
        }
        return SY_OK
    }

    func release(_ id: UInt64) {
        guard let entry = table.withLock({ $0.holds.removeValue(forKey: id) }) else { return }
        entry.gate.close()
        entry.hold.release()
    }

    /// Refuses every later request; with `releasing`, also gives up every hold still kept
    /// (the plugin's stop() has returned).
    func close(releasing: Bool) {
        let left = table.withLock { table in
            table.closed = true
            guard releasing else { return [(hold: any ListenerHold, gate: PluginHoldGate)]() }
            defer { table.holds.removeAll() }
            return Array(table.holds.values)
        }
        for entry in left {
            entry.gate.close()
            entry.hold.release()
        }
    }
}
