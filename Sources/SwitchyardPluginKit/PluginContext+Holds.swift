internal import SwitchyardABI
internal import SwitchyardBridge
import Synchronization

/// A named lock that the routers sharing a store take turns on (the host's hold service, ABI
/// section 10): one router's instance at a time holds a name. ``PluginContext/hold(_:changed:)``
/// asks for it; `changed(true)` says this instance has it, `changed(false)` that it had it and
/// lost it (its store connection broke: another router may hold it from then on). Keep the
/// object while the hold matters: releasing it (or letting it go) gives the hold up.
public final class PluginHold: Sendable {
    private let context: PluginContext
    private let callback: CallbackBox
    private let id: Mutex<UInt64?>

    /// The closure the host calls back, at a stable address for the hold's life.
    final class CallbackBox: Sendable {
        let changed: @Sendable (Bool) -> Void
        init(_ changed: @escaping @Sendable (Bool) -> Void) { self.changed = changed }
    }

    fileprivate init(context: PluginContext, callback: CallbackBox) {
        self.context = context
        self.callback = callback
        id = Mutex(nil)
    }

    fileprivate func acquire(_ name: String) throws(PluginError) {
        var name = name
        var holdID: UInt64 = 0
        let user = Unmanaged.passUnretained(callback).toOpaque()
        let status = name.withUTF8 { nameBytes in
            // Checked by the caller: the host table has the entry.
            context.host.pointee.hold_acquire(
                context.context, sy_bytes(nameBytes),
                { user, held in
                    guard let user else { return }
                    Unmanaged<CallbackBox>.fromOpaque(user).takeUnretainedValue().changed(held != 0)
                }, user, &holdID)
        }
        switch status {
        case SY_OK: id.withLock { $0 = holdID }
        case SY_ERR_STOPPED: throw PluginError("cannot hold '\(name)': the instance has stopped")
        case SY_ERR_TOO_LARGE: throw PluginError("cannot hold '\(name)': the name is over the router's limit")
        default: throw PluginError("cannot hold '\(name)': the router has no store to hold it in (status \(status))")
        }
    }

    /// Gives the hold up (or stops waiting for it). When it returns, `changed` runs no more.
    public func release() {
        guard
            let holdID = id.withLock({ id in
                defer { id = nil }; return id
            })
        else { return }
        context.host.pointee.hold_release(context.context, holdID)
    }

    deinit { release() }
}

extension PluginContext {
    /// Whether the router offers holds (a router built before them does not).
    public var offersHolds: Bool { offers(\.hold_release) }

    /// The version 2 host table without the entries added later (`SY_HOST_API_V2_BASE_SIZE`).
    static let hostTableBaseSize = MemoryLayout<sy_host_api_v2>.offset(of: \.hold_acquire) ?? MemoryLayout<sy_host_api_v2>.size

    /// Asks for the hold `name`; `changed` is called (on a router thread, briefly: hop to
    /// your own before doing work, and never release this hold from inside it) with true when
    /// this instance has it and false when it lost it — the last call.
    public func hold(_ name: String, changed: @escaping @Sendable (Bool) -> Void) throws(PluginError) -> PluginHold {
        guard offersHolds else { throw PluginError("cannot hold '\(name)': this router predates holds") }
        let hold = PluginHold(context: self, callback: PluginHold.CallbackBox(changed))
        try hold.acquire(name)
        return hold
    }
}
