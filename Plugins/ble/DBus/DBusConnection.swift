import CSDBus
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
public final class DBusConnection: @unchecked Sendable {
    // `bus` and the slots are touched only on the loop thread; `jobs` and `wakeup` are the
    // only state other threads use, behind the mutex and through the eventfd.
    private let bus: OpaquePointer
    private let wakeup: Int32
    private let jobs = Mutex<[@Sendable (OpaquePointer) -> Void]>([])
    private let closed = Atomic<Bool>(false)
    private var thread: Thread?
    private var slots: [OpaquePointer] = []

    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` when set), or to the bus at
    /// `address` (`unix:path=…`).
    public init(address: String? = nil) throws(DBusError) {
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
            guard opened >= 0, let bus else { throw DBusError(errno: opened, "connecting to the system bus") }
            self.bus = bus
        }
        wakeup = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        let thread = Thread { [unowned self] in self.loop() }
        thread.name = "sd-bus"
        self.thread = thread
        thread.start()
    }

    deinit {
        Glibc.close(wakeup)
        sd_bus_flush_close_unref(bus)
    }

    /// Stops the loop thread; calls still waiting fail.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
        while thread?.isFinished == false { usleep(1000) }
    }

    /// Runs `job` on the loop thread.
    private func perform(_ job: @escaping @Sendable (OpaquePointer) -> Void) {
        jobs.withLock { $0.append(job) }
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    private func loop() {
        var buffer: UInt64 = 0
        while !closed.load(ordering: .acquiring) {
            while true {
                let processed = sd_bus_process(bus, nil)
                if processed <= 0 { break }
            }
            for job in jobs.withLock({ jobs in
                defer { jobs.removeAll() }; return jobs
            }) { job(bus) }
            _ = sd_bus_flush(bus)
            var timeout: UInt64 = 0
            _ = sd_bus_get_timeout(bus, &timeout)
            let events = sd_bus_get_events(bus)
            var fds = [
                pollfd(fd: sd_bus_get_fd(bus), events: Int16(max(events, 0)), revents: 0),
                pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0),
            ]
            let now = Self.monotonicMicroseconds()
            let milliseconds: Int32 =
                timeout == UInt64.max ? 1000 : Int32(clamping: timeout > now ? (timeout - now + 999) / 1000 : 0)
            _ = poll(&fds, 2, min(milliseconds, 1000))
            if fds[1].revents != 0 { _ = read(wakeup, &buffer, 8) }
        }
        for slot in slots { sd_bus_slot_unref(slot) }
        slots.removeAll()
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }

    /// Calls a method and returns its reply's values; a D-Bus error reply throws with its name.
    public func call(
        destination: String, path: String, interface: String, member: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> [DBusValue] {
        let result: Result<[DBusValue], DBusError> = await withCheckedContinuation { continuation in
            let reply = ReplyBox(continuation)
            perform { bus in
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
                let box = Unmanaged.passRetained(reply).toOpaque()
                let microseconds = UInt64(max(0, timeout.components.seconds)) * 1_000_000
                let sent = sd_bus_call_async(bus, nil, message, DBusConnection.replyHandler, box, microseconds)
                if sent < 0 {
                    Unmanaged<ReplyBox>.fromOpaque(box).release()
                    reply.finish(.failure(DBusError(errno: sent, "calling \(interface).\(member)")))
                }
            }
        }
        return try result.get()
    }

    private static let replyHandler: sd_bus_message_handler_t = { message, userdata, _ in
        guard let userdata else { return 0 }
        let reply = Unmanaged<ReplyBox>.fromOpaque(userdata).takeRetainedValue()
        guard let message else {
            reply.finish(.failure(DBusError(message: "no reply")))
            return 0
        }
        if sd_bus_message_is_method_error(message, nil) != 0, let error = sd_bus_message_get_error(message) {
            let name = error.pointee.name.map { String(cString: $0) }
            let text = error.pointee.message.map { String(cString: $0) } ?? name ?? "error"
            reply.finish(.failure(DBusError(name: name, message: text)))
            return 0
        }
        do throws(DBusError) {
            reply.finish(.success(try DBusCoding.readAll(message)))
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
        let result: Result<Void, DBusError> = await withCheckedContinuation { continuation in
            perform { [unowned self] bus in
                let box = Unmanaged.passRetained(SignalBox(handler)).toOpaque()
                var slot: OpaquePointer?
                let added = sd_bus_match_signal(bus, &slot, sender, path, interface, member, DBusConnection.signalHandler, box)
                if added < 0 {
                    Unmanaged<SignalBox>.fromOpaque(box).release()
                    continuation.resume(returning: .failure(DBusError(errno: added, "subscribing to \(interface ?? "*").\(member ?? "*")")))
                    return
                }
                if let slot {
                    // The box lives as long as the slot: released when the slot is destroyed.
                    _ = sd_bus_slot_set_destroy_callback(slot) { userdata in
                        if let userdata { Unmanaged<SignalBox>.fromOpaque(userdata).release() }
                    }
                    slots.append(slot)
                }
                continuation.resume(returning: .success(()))
            }
        }
        try result.get()
    }

    private static let signalHandler: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let box = Unmanaged<SignalBox>.fromOpaque(userdata).takeUnretainedValue()
        let path = sd_bus_message_get_path(message).map { String(cString: $0) } ?? ""
        let interface = sd_bus_message_get_interface(message).map { String(cString: $0) } ?? ""
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        guard let arguments = try? DBusCoding.readAll(message) else { return 0 }
        box.handler(DBusSignal(path: path, interface: interface, member: member, arguments: arguments))
        return 0
    }
}

/// The continuation of one method call, resumed once.
private final class ReplyBox: @unchecked Sendable {
    // Resumed exactly once, on the loop thread.
    private let continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>
    init(_ continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>) { self.continuation = continuation }
    func finish(_ result: Result<[DBusValue], DBusError>) { continuation.resume(returning: result) }
}

/// A signal handler kept alive by its match slot.
private final class SignalBox {
    let handler: @Sendable (DBusSignal) -> Void
    init(_ handler: @escaping @Sendable (DBusSignal) -> Void) { self.handler = handler }
}
