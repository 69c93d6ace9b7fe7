import Glibc
import SDBus
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// The instance's way to BlueZ: a connection to the D-Bus system bus and a `SlateLink` on it.
/// A bus that is missing at start, or goes away later, is never fatal: the instance reports
/// itself not ready (gauge `ready` 0, with the reason logged for `/readyz`), tries again with
/// backoff and jitter (`reconnect.initial_delay` up to `reconnect.max_delay`), and every other
/// route keeps running.
final class BusLink: Sendable {
    private let configuration: BLEConfiguration
    private let context: PluginContext
    private let current = Mutex<SlateLink?>(nil)
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(configuration: BLEConfiguration, context: PluginContext) {
        self.configuration = configuration
        self.context = context
    }

    /// Starts connecting in the background; returns at once.
    func start() {
        let loop = Task { await self.run() }
        task.withLock { $0 = loop }
    }

    /// Stops trying, leaves the board and closes the bus.
    func stop() async {
        let loop = task.withLock { $0.take() }
        loop?.cancel()
        await loop?.value
    }

    /// Writes `text` to the display of the board, when there is a link to it.
    /// Why an iiidea piece on the board cannot work now, or nil.
    var pieceRefusal: String? {
        guard let link = current.withLock({ $0 }) else {
            return "no connection to the D-Bus system bus (BlueZ); it is asked again once there is"
        }
        return link.pieceRefusal
    }

    func write(_ text: String) async -> (DeliveryOutcome, String) {
        guard let link = current.withLock({ $0 }) else { return (.retry, "no connection to the D-Bus system bus") }
        return await link.write(text)
    }

    /// Why a bus session ended.
    private enum Ending {
        case stopped
        /// The bus is missing or went away; `afterConnecting` when it had been there.
        case lost(String, afterConnecting: Bool)
        case gaveUp
    }

    private func run() async {
        var backoff = Backoff(initial: configuration.initialDelay, maximum: configuration.maximumDelay)
        while !Task.isCancelled {
            let reason: String
            switch await session() {
            case .stopped, .gaveUp:
                return
            case .lost(let why, let afterConnecting):
                reason = why
                // A bus that was there earns a fresh start of the backoff.
                if afterConnecting { backoff.reset() }
            }
            context.metric(.gauge, "ready", 0)
            context.metric(.gauge, "connected", 0)
            context.metric(.counter, "bus_failures_total", 1)
            let wait = backoff.next()
            context.log(.warning, "\(reason); retrying in \(Backoff.text(wait))")
            try? await Task.sleep(for: wait)
        }
    }

    /// One connection to the bus: connect, run the board link on it until the bus goes away,
    /// the link gives up, or the instance stops.
    private func session() async -> Ending {
        let bus: DBusConnection
        do {
            bus = try DBusConnection { [context] refused in
                context.metric(.counter, "dbus_refused_total", 1)
                context.log(.warning, "D-Bus: \(refused)")
            }
        } catch {
            return .lost("no D-Bus system bus (\(Self.systemBus)): \(error)", afterConnecting: false)
        }
        let (ends, end) = AsyncStream<Void>.makeStream()
        let link = SlateLink(configuration: configuration, context: context, bus: bus) { end.finish() }
        bus.whenClosed { _ in end.finish() }
        do {
            try await link.start()
        } catch {
            bus.close()
            return .lost("subscribing to BlueZ's signals on the D-Bus system bus: \(error)", afterConnecting: true)
        }
        current.withLock { $0 = link }
        // Until the bus closes, the link gives up, or this task is cancelled (the stream ends).
        for await _ in ends {}
        current.withLock { $0 = nil }
        await link.stop()
        let lost = bus.isClosed
        bus.close()
        if Task.isCancelled { return .stopped }
        return lost ? .lost("lost the D-Bus system bus (\(Self.systemBus))", afterConnecting: true) : .gaveUp
    }

    /// Where sd-bus looks for the system bus, for messages.
    private static var systemBus: String {
        guard let variable = getenv("DBUS_SYSTEM_BUS_ADDRESS") else { return "/run/dbus/system_bus_socket" }
        return "DBUS_SYSTEM_BUS_ADDRESS=" + String(cString: variable)
    }
}
