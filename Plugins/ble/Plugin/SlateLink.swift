import SDBus
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// The link to one board through BlueZ on one bus connection: find it (scanning with a
/// discovery filter when BlueZ does not know it), connect, wait for service discovery, find the
/// service and its characteristics, subscribe to the buttons; then emit a `ble.ButtonPress` per
/// notification and write display text, until the link drops — then again, with backoff. A
/// board without the configured service or characteristics fails the instance with a message
/// naming what is missing (`gaveUp`); the router stays up. `BusLink` replaces the whole link
/// when the bus connection is lost.
final class SlateLink: Sendable {
    private static let bluez = "org.bluez"
    private static let device1 = "org.bluez.Device1"
    private static let adapter1 = "org.bluez.Adapter1"
    private static let service1 = "org.bluez.GattService1"
    private static let characteristic1 = "org.bluez.GattCharacteristic1"

    /// What the link has found on a connected board.
    private struct Session {
        var device: String
        var address: String
        /// Characteristic path → button number.
        var buttons: [String: Int]
        var display: String?
    }

    private let configuration: BLEConfiguration
    private let context: PluginContext
    private let bus: DBusConnection
    private let model: BlueZModel
    private let session = Mutex<Session?>(nil)
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let gaveUp: @Sendable () -> Void

    /// A link on `bus`; `gaveUp` runs when the board turned out not to be what the
    /// configuration describes (trying again will not help).
    init(configuration: BLEConfiguration, context: PluginContext, bus: DBusConnection, gaveUp: @escaping @Sendable () -> Void) {
        self.configuration = configuration
        self.context = context
        self.bus = bus
        self.gaveUp = gaveUp
        model = BlueZModel { [context] path in
            context.metric(.counter, "objects_dropped_total", 1)
            context.log(.warning, "BlueZ object \(path) not kept: the model holds its maximum of objects already")
        }
    }

    /// Subscribes to BlueZ's signals, then keeps the board connected in the background.
    func start() async throws(DBusError) {
        try await bus.subscribe(sender: Self.bluez, interface: "org.freedesktop.DBus.ObjectManager", member: nil) { signal in
            self.model.apply(signal)
        }
        try await bus.subscribe(sender: Self.bluez, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged") { signal in
            self.notified(signal)
            self.model.apply(signal)
        }
        // BlueZ restarting forgets every object: so does the model, which ends every wait on it.
        try await bus.subscribe(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged") {
            signal in
            if signal.arguments.first?.stringValue == Self.bluez { self.model.reset(from: nil) }
        }
        let loop = Task { await self.run() }
        task.withLock { $0 = loop }
    }

    /// Stops reconnecting and leaves the board (notifications stopped, disconnected), briefly.
    func stop() async {
        let loop = task.withLock { $0.take() }
        loop?.cancel()
        await loop?.value
        guard let current = session.withLock({ $0.take() }) else { return }
        for path in current.buttons.keys {
            _ = try? await bus.call(
                destination: Self.bluez, path: path, interface: Self.characteristic1, member: "StopNotify", timeout: .seconds(2))
        }
        _ = try? await bus.call(
            destination: Self.bluez, path: current.device, interface: Self.device1, member: "Disconnect", timeout: .seconds(2))
    }

    // MARK: Notifications

    /// A button characteristic's new value (called on the bus thread): one press.
    private func notified(_ signal: DBusSignal) {
        guard signal.arguments.count >= 2, signal.arguments[0].stringValue == Self.characteristic1,
            let value = signal.arguments[1].dictionaryValue?["Value"]?.bytesValue,
            let (button, address) = session.withLock({ session in session.flatMap { s in s.buttons[signal.path].map { ($0, s.address) } } })
        else { return }
        // An attribute value is at most 512 bytes (Bluetooth Core, ATT): anything longer is not
        // a notification from a board.
        guard value.count <= 512 else {
            context.metric(.counter, "presses_refused_total", 1)
            context.log(
                .warning, "a notification of \(value.count) bytes on \(signal.path) refused: attribute values are at most 512 bytes")
            return
        }
        var body: [String: JSONValue] = [
            "device": .string(address), "button": .int(button),
            "raw": .string(value.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()),
        ]
        if let first = value.first, let kind = configuration.pressKinds[first] { body["kind"] = .string(kind) }
        let envelope = Envelope(
            type: BLEPlugin.pressType, subject: "\(address)/button/\(button)",
            headers: ["ble.device": address, "ble.button": String(button)], body: JSONValue.object(body).serializedBytes())
        let result = context.emit(envelope, on: BLEPlugin.buttonsPort)
        context.metric(.counter, "presses_total", 1)
        if result != .ok {
            context.metric(.counter, "presses_dropped_total", 1)
            context.log(.warning, "button \(button) press not taken by the router (\(result)): a notification cannot be asked for again")
        }
    }

    // MARK: Display

    /// Writes `text` to the display; answers how it went.
    func write(_ text: String) async -> (DeliveryOutcome, String) {
        guard let display = configuration.display else { return (.reject, "no display: configured") }
        guard let path = session.withLock({ $0?.display }) else { return (.retry, "the board is not connected") }
        let bytes = Self.truncated(text, toBytes: display.maximumLength)
        do {
            _ = try await bus.call(
                destination: Self.bluez, path: path, interface: Self.characteristic1, member: "WriteValue",
                arguments: [.bytes(bytes), .options(["type": .string(display.withResponse ? "request" : "command")])],
                timeout: .seconds(10))
            context.metric(.counter, "display_writes_total", 1)
            return (.ok, "")
        } catch {
            let permanent = ["NotPermitted", "NotSupported", "InvalidArguments", "NotAuthorized"].contains {
                error.name == "org.bluez.Error." + $0
            }
            return (permanent ? .reject : .retry, "WriteValue: \(error)")
        }
    }

    /// The UTF-8 of `text`, cut at a character boundary to at most `limit` bytes.
    static func truncated(_ text: String, toBytes limit: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for character in text {
            let encoded = Array(String(character).utf8)
            if bytes.count + encoded.count > limit { break }
            bytes += encoded
        }
        return bytes
    }

    // MARK: The connection loop

    /// Why a session ended.
    private enum Ending: Error {
        /// Worth another try after a while.
        case transient(String)
        /// The board is not what the configuration describes: trying again will not help.
        case missing(String)
    }

    private func run() async {
        var backoff = Backoff(initial: configuration.initialDelay, maximum: configuration.maximumDelay)
        while !Task.isCancelled {
            var failure: String?
            do throws(Ending) {
                try await connectAndServe()
                if Task.isCancelled { return }
                backoff.reset()
                ready(false)
                context.log(.warning, "lost the board \(configuration.deviceDescription); reconnecting")
            } catch {
                if Task.isCancelled { return }
                ready(false)
                switch error {
                case .missing(let reason):
                    context.metric(.counter, "failures_total", 1)
                    context.log(.error, "\(reason); the instance stops trying (fix the configuration and reload)")
                    gaveUp()
                    return
                case .transient(let reason):
                    failure = reason
                }
            }
            let wait = backoff.next()
            if let failure { context.log(.warning, "\(failure); retrying in \(Backoff.text(wait))") }
            context.metric(.counter, "reconnects_total", 1)
            try? await Task.sleep(for: wait)
        }
    }

    private func ready(_ flag: Bool) {
        context.metric(.gauge, "ready", flag ? 1 : 0)
        context.metric(.gauge, "connected", flag ? 1 : 0)
    }

    private func call(
        _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)
    )
        async throws(Ending) -> [DBusValue]
    {
        do {
            return try await bus.call(
                destination: Self.bluez, path: path, interface: interface, member: member, arguments: arguments, timeout: timeout)
        } catch {
            throw .transient("\(interface.split(separator: ".").last ?? "").\(member) on \(path): \(error)")
        }
    }

    private func connectAndServe() async throws(Ending) {
        let adapter = "/org/bluez/\(configuration.adapter)"
        do {
            model.beginSnapshot()
            let tree = try await bus.call(
                destination: Self.bluez, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
            model.reset(from: tree.first)
        } catch  where ["ServiceUnknown", "NameHasNoOwner"].contains(where: { error.name == "org.freedesktop.DBus.Error." + $0 }) {
            throw .transient("BlueZ (org.bluez) is not running on the D-Bus system bus")
        } catch {
            throw .transient("BlueZ's GetManagedObjects: \(error)")
        }
        guard model.objects[adapter]?[Self.adapter1] != nil else { throw .transient("no Bluetooth adapter \(configuration.adapter)") }
        if model.objects[adapter]?[Self.adapter1, "Powered"]?.boolValue != true {
            context.log(.warning, "adapter \(configuration.adapter) is powered off; waiting for it")
            // Waits as long as it takes (or until the adapter goes away); cancellation ends it.
            while !Task.isCancelled {
                let changed = await model.wait(timeout: .seconds(3600)) {
                    $0[adapter]?[Self.adapter1] == nil || $0[adapter]?[Self.adapter1, "Powered"]?.boolValue == true
                }
                if changed { break }
            }
            if Task.isCancelled { return }
            guard model.objects[adapter]?[Self.adapter1] != nil else { throw .transient("adapter \(configuration.adapter) went away") }
        }
        let device = try await find(adapter: adapter)
        let address = model.objects[device]?[Self.device1, "Address"]?.stringValue ?? configuration.address ?? device
        if model.objects[device]?[Self.device1, "Connected"]?.boolValue != true {
            do {
                _ = try await bus.call(
                    destination: Self.bluez, path: device, interface: Self.device1, member: "Connect", timeout: configuration.connectTimeout
                )
            } catch  where error.name == "org.bluez.Error.AlreadyConnected" {
            } catch {
                throw .transient("Connect to \(address): \(error)")
            }
        }
        // An LE Connect may return before service discovery ends.
        let resolved = await model.wait(timeout: configuration.connectTimeout) {
            $0[device]?[Self.device1, "ServicesResolved"]?.boolValue == true
        }
        guard resolved else {
            throw .transient("\(address) connected but its services were not resolved within \(configuration.connectTimeout)")
        }

        let found = try resolveLayout(device: device, address: address)
        for path in found.buttons.keys {
            do {
                _ = try await bus.call(destination: Self.bluez, path: path, interface: Self.characteristic1, member: "StartNotify")
            } catch  where error.name == "org.bluez.Error.InProgress" {
            } catch {
                throw .transient("StartNotify on \(path): \(error)")
            }
        }
        session.withLock { $0 = found }
        ready(true)
        context.log(
            .notice,
            "connected to \(address): \(found.buttons.count) button characteristic(s)\(found.display == nil ? "" : " and the display")")
        defer { session.withLock { $0 = nil } }
        // Until the link drops: the device disconnects or disappears, or the adapter goes off.
        while !Task.isCancelled {
            let lost = await model.wait(timeout: .seconds(3600)) { objects in
                objects[device]?[Self.device1, "Connected"]?.boolValue != true
                    || objects[adapter]?[Self.adapter1, "Powered"]?.boolValue != true
            }
            if lost { return }
        }
    }

    /// Why an iiidea piece on this board cannot work now, or nil once it is connected: BlueZ
    /// knows the board but it is not paired, or it is not connected (yet, or any more).
    var pieceRefusal: String? {
        guard session.withLock({ $0 == nil }) else { return nil }
        let description = configuration.deviceDescription
        let known = model.objects.first { _, interfaces in
            guard let properties = interfaces[Self.device1] else { return false }
            if let address = configuration.address { return properties["Address"]?.stringValue?.uppercased() == address }
            return properties["Name"]?.stringValue == configuration.name || properties["Alias"]?.stringValue == configuration.name
        }
        if let device = known?.value[Self.device1], device["Paired"]?.boolValue == false {
            return "the Slate+ (\(description)) is not paired: pair it (bluetoothctl pair ADDRESS) and it is asked again"
        }
        return "the Slate+ (\(description)) is not connected; it is asked again once it is"
    }

    /// The device's object path: known to BlueZ already, or found by a scan for the service.
    private func find(adapter: String) async throws(Ending) -> String {
        let matches = { @Sendable (objects: BlueZModel.Objects) -> String? in
            objects.keys.sorted().first { path in
                guard path.hasPrefix(adapter + "/"), let properties = objects[path]?[Self.device1] else { return false }
                if let address = self.configuration.address { return properties["Address"]?.stringValue?.uppercased() == address }
                return properties["Name"]?.stringValue == self.configuration.name
                    || properties["Alias"]?.stringValue == self.configuration.name
            }
        }
        if let known = matches(model.objects) { return known }
        let filter = DBusValue.options(["UUIDs": .array(element: "s", [.string(configuration.service)]), "Transport": .string("le")])
        _ = try await call(adapter, Self.adapter1, "SetDiscoveryFilter", [filter])
        _ = try await call(adapter, Self.adapter1, "StartDiscovery")
        context.log(.info, "scanning for \(configuration.deviceDescription) with service \(configuration.service)")
        let seen = await model.wait(timeout: configuration.scanTimeout) { matches($0) != nil }
        _ = try? await bus.call(destination: Self.bluez, path: adapter, interface: Self.adapter1, member: "StopDiscovery")
        guard seen, let found = matches(model.objects) else {
            throw .transient("\(configuration.deviceDescription) not found by a \(configuration.scanTimeout) scan")
        }
        return found
    }

    /// The service and characteristics on a resolved device, or what is missing.
    private func resolveLayout(device: String, address: String) throws(Ending) -> Session {
        let objects = model.objects
        let services = objects.filter { $0.key.hasPrefix(device + "/") && $0.value[Self.service1] != nil }
        guard
            let service = services.first(where: { $0.value[Self.service1, "UUID"]?.stringValue?.lowercased() == configuration.service })?
                .key
        else {
            let offered = services.values.compactMap { $0[Self.service1, "UUID"]?.stringValue }.sorted()
            throw .missing(
                "\(address) has no GATT service \(configuration.service) (it offers: \(offered.isEmpty ? "none" : offered.joined(separator: ", ")))"
            )
        }
        let characteristics = objects.filter { $0.key.hasPrefix(service + "/") && $0.value[Self.characteristic1] != nil }
        func path(of uuid: String, flags needed: [String], role: String) throws(Ending) -> String {
            guard let entry = characteristics.first(where: { $0.value[Self.characteristic1, "UUID"]?.stringValue?.lowercased() == uuid })
            else {
                let offered = characteristics.values.compactMap { $0[Self.characteristic1, "UUID"]?.stringValue }.sorted()
                throw .missing(
                    "service \(configuration.service) on \(address) has no \(role) characteristic \(uuid) (it has: \(offered.isEmpty ? "none" : offered.joined(separator: ", ")))"
                )
            }
            let flags = entry.value[Self.characteristic1, "Flags"]?.stringsValue ?? []
            guard needed.contains(where: flags.contains) else {
                throw .missing(
                    "characteristic \(uuid) on \(address) cannot serve as \(role): its flags are \(flags), it needs one of \(needed)")
            }
            return entry.key
        }
        var buttons: [String: Int] = [:]
        for button in configuration.buttons {
            buttons[try path(of: button.characteristic, flags: ["notify", "indicate"], role: "button \(button.number)")] = button.number
        }
        let display = try configuration.display.map { display throws(Ending) in
            try path(of: display.characteristic, flags: display.withResponse ? ["write"] : ["write-without-response"], role: "display")
        }
        return Session(device: device, address: address, buttons: buttons, display: display)
    }
}
