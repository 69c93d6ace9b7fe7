import CSDBus
import Dispatch
import Foundation
import Glibc
import Synchronization

/// A signal received on a subscription.
public struct DBusSignal: Sendable {
    /// The object that sent it.
    public var path: String
    /// Its interface.
    public var interface: String
    /// Its name.
    public var member: String
    /// Its arguments.
    public var arguments: [DBusValue]
}

/// One connection to the system bus through sd-bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured).
/// sd-bus is not thread-safe: every call on the connection runs on its own thread, which
/// polls the bus socket and an eventfd that other threads wake it with. Method calls are
/// asynchronous on the bus (`sd_bus_call_async`), so a slow peer does not stop signals.
///
/// The connection ends when `close()` is called or when the bus goes away (the daemon exits):
/// then every call still waiting fails, later calls fail at once, and the `whenClosed`
/// actions run. Call `close()` when done: the loop thread keeps the connection alive until then.
public final class DBusConnection: @unchecked Sendable {
    // `bus` and `slots` are touched only on the loop thread; other threads reach the bus only
    // through `queue` (behind its mutex) and the `wakeup` eventfd.
    private let bus: OpaquePointer
    private let wakeup: Int32
    private let limits: DBusLimits
    private let refused: (@Sendable (DBusError) -> Void)?
    private let queue = Mutex(Queue())
    private let closing = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)
    private var slots: [OpaquePointer] = []

    /// What other threads hand the loop thread, and whether it has ended.
    private struct Queue {
        var jobs: [@Sendable (OpaquePointer?) -> Void] = []
        var closedActions: [@Sendable (DBusError?) -> Void] = []
        /// Set once the loop ended: nil after `close()`, the error when the bus went away.
        var ending: Ending?
    }

    private enum Ending {
        case closed
        case lost(DBusError)

        var error: DBusError? {
            if case .lost(let error) = self { return error }
            return nil
        }
    }

    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` when set), or to the bus at
    /// `address` (`unix:path=…`). Messages are decoded within `limits`; a signal that breaks
    /// them (or is malformed) is dropped and handed to `refused`.
    public init(
        address: String? = nil, limits: DBusLimits = DBusLimits(), refused: (@Sendable (DBusError) -> Void)? = nil
    ) throws(DBusError) {
        var bus: OpaquePointer?
        if let address {
            var created = sd_bus_new(&bus)
            if created >= 0 { created = sd_bus_set_address(bus, address) }
            if created >= 0 { created = sd_bus_set_bus_client(bus, 1) }
            if created >= 0 { created = sd_bus_start(bus) }
            guard created >= 0, let bus else {
                sd_bus_unref(bus)
                throw DBusError(errno: created, "connecting to \(address)")
            }
            self.bus = bus
        } else {
            let opened = sd_bus_open_system(&bus)
            guard opened >= 0, let bus else {
                sd_bus_unref(bus)
                throw DBusError(errno: opened, "connecting to the system bus")
            }
            self.bus = bus
        }
        self.limits = limits
        self.refused = refused
        wakeup = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        // The thread holds the connection until its loop ends (close, or the bus going away).
        let thread = Thread { self.loop() }
        thread.name = "sd-bus"
        thread.start()
    }

    deinit { Glibc.close(wakeup) }

    /// Whether the connection has ended (closed, or the bus went away).
    public var isClosed: Bool { queue.withLock { $0.ending != nil } }

    /// Runs `action` once the connection ends — with the error when the bus went away, nil
    /// after `close()` — at once (on this thread) when it has ended already.
    public func whenClosed(_ action: @escaping @Sendable (DBusError?) -> Void) {
        let ending = queue.withLock { queue -> Ending? in
            if queue.ending == nil { queue.closedActions.append(action) }
            return queue.ending
        }
        if let ending { action(ending.error) }
    }

    /// Stops the loop thread and waits until it has; calls still waiting fail.
    public func close() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake()
        ended.wait()
    }

    /// Runs `job` on the loop thread, or with nil at once when the connection has ended.
    private func perform(_ job: @escaping @Sendable (OpaquePointer?) -> Void) {
        let queued = queue.withLock { queue in
            if queue.ending == nil { queue.jobs.append(job) }
            return queue.ending == nil
        }
        if queued { wake() } else { job(nil) }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    private func loop() {
        var lost: DBusError?
        while lost == nil, !closing.load(ordering: .acquiring) {
            lost = processAll()
            if lost != nil { break }
            for job in queue.withLock({ $0.jobs.take() }) { job(bus) }
            _ = sd_bus_flush(bus)
            if sd_bus_is_open(bus) <= 0 {
                lost = DBusError(message: "the bus connection was closed by the other side")
                break
            }
            pollOnce()
        }
        let (jobs, actions) = queue.withLock { queue in
            queue.ending = lost.map(Ending.lost) ?? .closed
            return (queue.jobs.take(), queue.closedActions.take())
        }
        for job in jobs { job(nil) }
        for slot in slots { sd_bus_slot_unref(slot) }
        slots.removeAll()
        // Freeing the bus destroys the slots of calls still waiting: their destroy callbacks
        // fail them.
        sd_bus_flush_close_unref(bus)
        ended.signal()
        for action in actions { action(lost) }
    }

    /// Dispatches everything that has arrived; the error when the bus went away.
    private func processAll() -> DBusError? {
        while true {
            let processed = sd_bus_process(bus, nil)
            if processed < 0 { return DBusError(errno: processed, "the bus connection was lost") }
            if processed == 0 { return nil }
        }
    }

    /// Waits for the bus socket, the wakeup, or the next sd-bus timeout (at most a second).
    private func pollOnce() {
        var timeout: UInt64 = 0
        _ = sd_bus_get_timeout(bus, &timeout)
        let events = sd_bus_get_events(bus)
        var fds = [
            pollfd(fd: sd_bus_get_fd(bus), events: Int16(clamping: max(events, 0)), revents: 0),
            pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0),
        ]
        let now = Self.monotonicMicroseconds()
        let milliseconds: Int32 =
            timeout == UInt64.max ? 1000 : Int32(clamping: timeout > now ? (timeout - now) / 1000 + 1 : 0)
        _ = poll(&fds, 2, min(milliseconds, 1000))
        var buffer: UInt64 = 0
        if fds[1].revents != 0 { _ = read(wakeup, &buffer, 8) }
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(clamping: now.tv_sec) &* 1_000_000 &+ UInt64(clamping: now.tv_nsec) / 1000
    }

    /// Calls a method and returns its reply's values; a D-Bus error reply throws with its name.
    /// Cancelling the task fails the call at once (its reply, if any, is dropped).
    public func call(
        destination: String, path: String, interface: String, member: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> [DBusValue] {
        let reply = ReplyBox(limits: limits)
        let result: Result<[DBusValue], DBusError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                reply.attach(continuation)
                perform { bus in
                    guard let bus else { return reply.finish(.failure(DBusError(message: "the bus connection is closed"))) }
                    Self.send(
                        on: bus, reply, destination: destination, path: path, interface: interface, member: member,
                        arguments: arguments, timeout: timeout)
                }
            }
        } onCancel: {
            reply.finish(.failure(DBusError(message: "\(interface).\(member) cancelled")))
        }
        return try result.get()
    }

    /// Sends a method call (on the loop thread); its slot, owned by the bus, keeps `reply`
    /// until the reply, the timeout or the end of the connection.
    private static func send(
        on bus: OpaquePointer, _ reply: ReplyBox, destination: String, path: String, interface: String, member: String,
        arguments: [DBusValue], timeout: Duration
    ) {
        var message: OpaquePointer?
        let created = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard created >= 0, let message else {
            return reply.finish(.failure(DBusError(errno: created, "calling \(interface).\(member)")))
        }
        defer { sd_bus_message_unref(message) }
        do throws(DBusError) {
            for argument in arguments { try DBusCoding.append(argument, to: message) }
        } catch {
            return reply.finish(.failure(error))
        }
        // Whole seconds, at least one (0 would mean sd-bus's default), at most a day.
        let microseconds = UInt64(min(max(timeout.components.seconds, 1), 86_400)) * 1_000_000
        let box = Unmanaged.passRetained(reply).toOpaque()
        var slot: OpaquePointer?
        let sent = sd_bus_call_async(bus, &slot, message, DBusConnection.replyHandler, box, microseconds)
        guard sent >= 0, let slot else {
            Unmanaged<ReplyBox>.fromOpaque(box).release()
            return reply.finish(.failure(DBusError(errno: sent, "calling \(interface).\(member)")))
        }
        // The slot releases the box when it dies; failing the call first is a no-op after a reply.
        _ = sd_bus_slot_set_destroy_callback(slot) { userdata in
            guard let userdata else { return }
            Unmanaged<ReplyBox>.fromOpaque(userdata).takeRetainedValue().finish(
                .failure(DBusError(message: "the bus connection closed before the reply")))
        }
        _ = sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
    }

    private static let replyHandler: sd_bus_message_handler_t = { message, userdata, _ in
        guard let userdata else { return 0 }
        let reply = Unmanaged<ReplyBox>.fromOpaque(userdata).takeUnretainedValue()
        guard let message else {
            reply.finish(.failure(DBusError(message: "no reply")))
            return 0
        }
        if sd_bus_message_is_method_error(message, nil) != 0, let error = sd_bus_message_get_error(message) {
            let name = error.pointee.name.map { DBusCoding.text($0) }
            let text = error.pointee.message.map { DBusCoding.text($0) } ?? name ?? "error"
            reply.finish(.failure(DBusError(name: name, message: text)))
            return 0
        }
        do throws(DBusError) {
            var budget = DBusCoding.Budget(reply.limits)
            reply.finish(.success(try DBusCoding.readAll(message, budget: &budget)))
        } catch {
            reply.finish(.failure(error))
        }
        return 0
    }

    /// Delivers every signal matching the given fields (nil matches anything) to `handler`, on
    /// the loop thread, until the connection closes. Returns once the match is installed.
    public func subscribe(
        sender: String?, path: String? = nil, interface: String?, member: String?,
        _ handler: @escaping @Sendable (DBusSignal) -> Void
    ) async throws(DBusError) {
        let signals = SignalBox(handler: handler, limits: limits, refused: refused)
        let result: Result<Void, DBusError> = await withCheckedContinuation { continuation in
            perform { [self] bus in
                guard let bus else {
                    return continuation.resume(returning: .failure(DBusError(message: "the bus connection is closed")))
                }
                let box = Unmanaged.passRetained(signals).toOpaque()
                var slot: OpaquePointer?
                let added = sd_bus_match_signal(bus, &slot, sender, path, interface, member, DBusConnection.signalHandler, box)
                guard added >= 0, let slot else {
                    Unmanaged<SignalBox>.fromOpaque(box).release()
                    let what = "subscribing to \(interface ?? "*").\(member ?? "*")"
                    return continuation.resume(returning: .failure(DBusError(errno: added, what)))
                }
                // The box lives as long as the slot: released when the slot is destroyed.
                _ = sd_bus_slot_set_destroy_callback(slot) { userdata in
                    if let userdata { Unmanaged<SignalBox>.fromOpaque(userdata).release() }
                }
                slots.append(slot)
                continuation.resume(returning: .success(()))
            }
        }
        try result.get()
    }

    private static let signalHandler: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let box = Unmanaged<SignalBox>.fromOpaque(userdata).takeUnretainedValue()
        let path = sd_bus_message_get_path(message).map { DBusCoding.text($0) } ?? ""
        let interface = sd_bus_message_get_interface(message).map { DBusCoding.text($0) } ?? ""
        let member = sd_bus_message_get_member(message).map { DBusCoding.text($0) } ?? ""
        do throws(DBusError) {
            var budget = DBusCoding.Budget(box.limits)
            let arguments = try DBusCoding.readAll(message, budget: &budget)
            box.handler(DBusSignal(path: path, interface: interface, member: member, arguments: arguments))
        } catch {
            box.refused?(DBusError(name: error.name, message: "signal \(interface).\(member) from \(path) refused: \(error.message)"))
        }
        return 0
    }
}

/// The continuation of one method call: resumed once, by the reply, the end of the connection
/// or the cancellation of the caller, whichever comes first.
private final class ReplyBox: Sendable {
    typealias Reply = Result<[DBusValue], DBusError>

    private enum State {
        case empty
        case waiting(CheckedContinuation<Reply, Never>)
        case finishedEarly(Reply)
        case finished
    }

    let limits: DBusLimits
    private let state = Mutex(State.empty)

    init(limits: DBusLimits) { self.limits = limits }

    /// Hands over the caller's continuation; resumes it at once when the call already ended.
    func attach(_ continuation: CheckedContinuation<Reply, Never>) {
        let early = state.withLock { state -> Reply? in
            guard case .finishedEarly(let reply) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .finished
            return reply
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Ends the call with `reply`, unless it has ended already.
    func finish(_ reply: Reply) {
        let waiting = state.withLock { state -> CheckedContinuation<Reply, Never>? in
            switch state {
            case .empty:
                state = .finishedEarly(reply)
                return nil
            case .waiting(let continuation):
                state = .finished
                return continuation
            case .finishedEarly, .finished:
                return nil
            }
        }
        waiting?.resume(returning: reply)
    }
}

/// A signal handler kept alive by its match slot.
private final class SignalBox: Sendable {
    let handler: @Sendable (DBusSignal) -> Void
    let limits: DBusLimits
    let refused: (@Sendable (DBusError) -> Void)?

    init(handler: @escaping @Sendable (DBusSignal) -> Void, limits: DBusLimits, refused: (@Sendable (DBusError) -> Void)?) {
        self.handler = handler
        self.limits = limits
        self.refused = refused
    }
}

extension Array {
    /// The elements, leaving the array empty.
    fileprivate mutating func take() -> [Element] {
        defer { removeAll() }
        return self
    }
}
