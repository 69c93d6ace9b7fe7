import SDBus
import Synchronization

/// BlueZ's object tree as this client last saw it (from `GetManagedObjects`, kept current by
/// `InterfacesAdded`/`InterfacesRemoved`/`PropertiesChanged`), and waits for a condition on it.
/// Conditions are checked against the current state, never against past events, so a signal
/// from an earlier connection cannot end a wait of a later one.
final class BlueZModel: Sendable {
    /// Object path → interface → property → value.
    typealias Objects = [String: [String: [String: DBusValue]]]

    private struct Waiter {
        var condition: @Sendable (Objects) -> Bool
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var objects: Objects = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        /// Waits that timed out (or were cancelled) before they were registered.
        var expiredEarly: Set<UInt64> = []
        /// The signals applied since a `GetManagedObjects` was sent (``beginSnapshot()``),
        /// replayed over its reply; nil when none is under way.
        var journal: [DBusSignal]?
    }

    private let state = Mutex(State())
    /// The most objects kept: BlueZ announces every device in range, and a hostile or broken
    /// bus peer could announce without end. New objects past it are dropped (`overflowed`).
    let maximumObjects: Int
    private let overflowed: @Sendable (String) -> Void

    /// An empty model; `overflowed` is told the path of each object dropped for lack of room.
    init(maximumObjects: Int = 10_000, overflowed: @escaping @Sendable (String) -> Void = { _ in }) {
        self.maximumObjects = maximumObjects
        self.overflowed = overflowed
    }

    /// The tree now.
    var objects: Objects { state.withLock { $0.objects } }

    /// The most signals kept for replay while a `GetManagedObjects` is under way.
    static let journalLimit = 10_000

    /// Starts remembering the signals applied from now on, until ``reset(from:)`` replays
    /// them. Call it before sending `GetManagedObjects`: signals are applied as the bus reads
    /// them, its reply only when the asking task resumes — later, on a loaded machine — so a
    /// device announced meanwhile would be undone by the older tree the reply holds.
    func beginSnapshot() { state.withLock { $0.journal = [] } }

    /// Replaces the tree with a `GetManagedObjects` reply (`a{oa{sa{sv}}}`), then replays the
    /// signals applied since ``beginSnapshot()`` (those the reply already holds change nothing
    /// once replayed in order). Without a reply (BlueZ left the bus): an empty tree, and
    /// nothing from before it is replayed.
    func reset(from reply: DBusValue?) {
        var objects: Objects = [:]
        var dropped: [String] = []
        for (path, interfaces) in reply?.dictionaryValue ?? [:] {
            guard objects.count < maximumObjects else {
                dropped.append(path)
                continue
            }
            objects[path] = Self.interfaces(interfaces)
        }
        update { state in
            if reply != nil {
                for signal in state.journal ?? [] { Self.apply(signal, to: &objects, maximum: maximumObjects, dropped: &dropped) }
                state.journal = nil
            } else if state.journal != nil {
                state.journal = []
            }
            state.objects = objects
        }
        for path in dropped { overflowed(path) }
    }

    /// Applies a BlueZ signal to the tree.
    func apply(_ signal: DBusSignal) {
        var dropped: [String] = []
        update { state in
            Self.apply(signal, to: &state.objects, maximum: maximumObjects, dropped: &dropped)
            if state.journal != nil, state.journal?.count ?? 0 < Self.journalLimit { state.journal?.append(signal) }
        }
        for path in dropped { overflowed(path) }
    }

    private static func apply(_ signal: DBusSignal, to objects: inout Objects, maximum: Int, dropped: inout [String]) {
        switch (signal.interface, signal.member) {
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            guard signal.arguments.count == 2, let path = signal.arguments[0].stringValue else { return }
            guard objects[path] != nil || objects.count < maximum else { return dropped.append(path) }
            objects[path, default: [:]].merge(interfaces(signal.arguments[1])) { _, new in new }
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
            guard signal.arguments.count == 2, let path = signal.arguments[0].stringValue else { return }
            for interface in signal.arguments[1].stringsValue ?? [] { objects[path]?.removeValue(forKey: interface) }
            if objects[path]?.isEmpty == true { objects.removeValue(forKey: path) }
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard signal.arguments.count >= 2, let interface = signal.arguments[0].stringValue, objects[signal.path] != nil else { return }
            let changed = (signal.arguments[1].dictionaryValue ?? [:]).mapValues(\.unwrapped)
            let invalidated = signal.arguments.count > 2 ? signal.arguments[2].stringsValue ?? [] : []
            objects[signal.path, default: [:]][interface, default: [:]].merge(changed) { _, new in new }
            for name in invalidated { objects[signal.path]?[interface]?.removeValue(forKey: name) }
        default:
            break
        }
    }

    private static func interfaces(_ value: DBusValue) -> [String: [String: DBusValue]] {
        (value.dictionaryValue ?? [:]).mapValues { ($0.dictionaryValue ?? [:]).mapValues(\.unwrapped) }
    }

    private func update(_ change: (inout State) -> Void) {
        let satisfied = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            change(&state)
            let objects = state.objects
            let done = state.waiters.filter { $0.value.condition(objects) }
            for key in done.keys { state.waiters.removeValue(forKey: key) }
            return done.values.map(\.continuation)
        }
        for continuation in satisfied { continuation.resume(returning: true) }
    }

    /// Waits until `condition` holds for the tree (true) or `timeout` passes (false).
    func wait(timeout: Duration, until condition: @escaping @Sendable (Objects) -> Bool) async -> Bool {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task {
            // Cancelled once the wait is over: then there is nothing to expire.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self.expire(id)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = state.withLock { state -> Bool? in
                    if condition(state.objects) { return true }
                    if state.expiredEarly.remove(id) != nil { return false }
                    state.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            self.expire(id)
        }
    }

    private func expire(_ id: UInt64) {
        let waiter = state.withLock { state in
            let waiter = state.waiters.removeValue(forKey: id)
            if waiter == nil { state.expiredEarly.insert(id) }
            return waiter
        }
        waiter?.continuation.resume(returning: false)
    }
}

extension [String: [String: DBusValue]] {
    /// A property of one of the object's interfaces.
    subscript(interface: String, property: String) -> DBusValue? { self[interface]?[property] }
}
