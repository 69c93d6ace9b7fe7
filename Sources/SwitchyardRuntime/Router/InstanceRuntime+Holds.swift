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

/// The holds one instance asked for, by the id the plugin knows them by.
struct PluginHoldTable: ~Copyable {
    var nextID: UInt64 = 0
    var holds: [UInt64: (hold: any ListenerHold, gate: PluginHoldGate)] = [:]
}

extension InstanceRuntime {
    // The host's hold service (ABI section 10): named locks in the shared store when there is
    // one (PostgreSQL advisory locks, see PostgresStore+Holds), else in this router. A name is
    // the instance's own: two instances never contend, and the same instance on two routers does.

    func holdAcquire(name: sy_bytes, changed: sy_hold_callback, user: UnsafeMutableRawPointer?, holdID: UnsafeMutablePointer<UInt64>)
        -> Int32
    {
        guard name.length > 0, name.length <= PluginStateLimits.maximumKey, name.data != nil else {
            return name.length > PluginStateLimits.maximumKey ? SY_ERR_TOO_LARGE : SY_ERR_INVALID
        }
        let gate = PluginHoldGate(changed: changed, user: user)
        // Reserved before the claim exists: a grant may come before hold() returns.
        let id = pluginHolds.withLock { table in
            table.nextID &+= 1
            return table.nextID
        }
        holdID.pointee = id
        let hold = router.pluginHolds.hold(
            "plugin \(self.name) \(name.string)", granted: { gate.tell(held: true) }, lost: { gate.tell(held: false) })
        let kept = pluginHolds.withLock { table in
            guard !stopCalled.load(ordering: .relaxed) else { return false }
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

    func holdRelease(id: UInt64) {
        guard let entry = pluginHolds.withLock({ $0.holds.removeValue(forKey: id) }) else { return }
        entry.gate.close()
        entry.hold.release()
    }

    /// Releases every hold the plugin left (after its stop() returned).
    func releasePluginHolds() {
        let left = pluginHolds.withLock { table in
            defer { table.holds.removeAll() }
            return Array(table.holds.values)
        }
        for entry in left {
            entry.gate.close()
            entry.hold.release()
        }
    }
}
