import SDBus
import Testing

/// The sd-bus connection against the BlueZ double on a private bus: calls, typed replies,
/// D-Bus error names, and signals.
@Suite(.timeLimit(.minutes(1)))
struct DBusConnectionTests {
    static let device = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01"
    static let button = device + "/service0010/char0011"
    static let display = device + "/service0010/char0012"

    static func slate(_ double: BlueZDouble) throws {
        try double.control("org.bluez.Mock.AddAdapter", ["hci0", "switchyard"])
        try double.control("org.bluez.Mock.AddDevice", ["hci0", "AA:BB:CC:DD:EE:01", "Slate+"])
        try double.control(
            "org.bluez.Mock.AddGattLayout",
            [
                device, "0000aaaa-0000-1000-8000-00805f9b34fb",
                "[('0000aa01-0000-1000-8000-00805f9b34fb', ['notify']), ('0000aa02-0000-1000-8000-00805f9b34fb', ['write'])]",
            ])
    }

    @Test func managedObjectsArriveTypedAndErrorsKeepTheirNames() async throws {
        let double = try BlueZDouble()
        defer { double.stop() }
        try Self.slate(double)
        let bus = try DBusConnection(address: double.address)
        defer { bus.close() }
        let objects = try await bus.call(
            destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        let tree = try #require(objects.first?.dictionaryValue)
        #expect(tree[Self.device]?.dictionaryValue?["org.bluez.Device1"]?.dictionaryValue?["Name"]?.stringValue == "Slate+")
        #expect(tree[Self.button] == nil, "GATT appears only after Connect")

        let error = await #expect(throws: DBusError.self) {
            try await bus.call(destination: "org.bluez", path: Self.device, interface: "org.bluez.Device1", member: "Disconnect")
        }
        #expect(error?.name == "org.bluez.Error.NotConnected")
    }

    @Test func connectResolvesServicesAndNotificationsArriveAsSignals() async throws {
        let double = try BlueZDouble()
        defer { double.stop() }
        try Self.slate(double)
        let bus = try DBusConnection(address: double.address)
        defer { bus.close() }
        let (signals, sink) = AsyncStream<DBusSignal>.makeStream()
        try await bus.subscribe(sender: "org.bluez", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged") { signal in
            sink.yield(signal)
        }
        _ = try await bus.call(destination: "org.bluez", path: Self.device, interface: "org.bluez.Device1", member: "Connect")
        _ = try await bus.call(
            destination: "org.bluez", path: Self.button, interface: "org.bluez.GattCharacteristic1", member: "StartNotify")
        #expect(try double.control("org.bluez.Mock.Notify", [Self.button, "[2]"]).contains("true"))
        var resolved = false
        var value: [UInt8]?
        // Bounded by the suite's time limit: the double emits these in this order.
        for await signal in signals {
            let changed = signal.arguments.count == 3 ? signal.arguments[1].dictionaryValue ?? [:] : [:]
            if signal.path == Self.device, changed["ServicesResolved"]?.boolValue == true { resolved = true }
            if signal.path == Self.button, let bytes = changed["Value"]?.bytesValue {
                value = bytes
                break
            }
        }
        #expect(resolved)
        #expect(value == [2])

        _ = try await bus.call(
            destination: "org.bluez", path: Self.display, interface: "org.bluez.GattCharacteristic1", member: "WriteValue",
            arguments: [.bytes(Array("Hi".utf8)), .options(["type": .string("request")])])
        #expect(try double.control("org.bluez.Mock.Written", [Self.display]).contains("0x48, 0x69"))
    }
}
