import SDBus
import Testing

@testable import IntegrationSupport

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

    /// Replies and signals a hostile peer makes too big, too many or too deep are refused
    /// (named, counted by the caller) before they are decoded; the connection keeps working.
    @Test func messagesOverTheLimitsAreRefusedAndTheConnectionKeepsWorking() async throws {
        let double = try BlueZDouble()
        defer { double.stop() }
        try Self.slate(double)
        let hostile = "org.example.Hostile"
        for (member, signature, code) in [
            ("Bytes", "ay", "ret = dbus.ByteArray(b'x' * 100)"),
            ("Many", "ai", "ret = dbus.Array(range(1000), signature='i')"),
            ("Deep", "v", "ret = dbus.Int32(1, variant_level=20)"),
            ("Long", "s", "ret = 'x' * 100"),
            ("Fine", "s", "ret = 'ok'"),
        ] {
            try double.control("org.freedesktop.DBus.Mock.AddMethod", [hostile, member, "", signature, code])
        }
        let (refusals, refused) = AsyncStream<DBusError>.makeStream()
        let bus = try DBusConnection(
            address: double.address, limits: DBusLimits(maximumValues: 500, maximumBytes: 64, maximumDepth: 8)
        ) { refused.yield($0) }
        defer { bus.close() }
        for (member, expected) in [("Bytes", "bytes"), ("Many", "values"), ("Deep", "deeper than 8"), ("Long", "bytes")] {
            let error = await #expect(throws: DBusError.self, "\(member)") {
                try await bus.call(destination: "org.bluez", path: "/", interface: hostile, member: member)
            }
            #expect(error?.message.contains(expected) == true, "\(member): \(String(describing: error))")
        }
        let fine = try await bus.call(destination: "org.bluez", path: "/", interface: hostile, member: "Fine")
        #expect(fine == [.string("ok")], "the connection still answers")

        let (signals, sink) = AsyncStream<DBusSignal>.makeStream()
        try await bus.subscribe(sender: "org.bluez", interface: hostile, member: nil) { sink.yield($0) }
        try double.control("org.freedesktop.DBus.Mock.EmitSignal", [hostile, "Big", "s", "[<'\(String(repeating: "y", count: 100))'>]"])
        try double.control("org.freedesktop.DBus.Mock.EmitSignal", [hostile, "Small", "s", "[<'hi'>]"])
        var refusalIterator = refusals.makeAsyncIterator()
        let refusal = await refusalIterator.next()
        #expect(refusal?.message.contains("signal \(hostile).Big from / refused") == true, "\(String(describing: refusal))")
        var signalIterator = signals.makeAsyncIterator()
        let next = await signalIterator.next()
        #expect(next?.member == "Small")
        #expect(next?.arguments == [.string("hi")])
    }
}
