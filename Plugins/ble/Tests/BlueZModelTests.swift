import Testing

@testable import BLEPlugin
@testable import SDBus

/// BlueZ's object tree as the ble plugin keeps it, fed signals and `GetManagedObjects` replies
/// by hand, in the order a loaded machine can deliver them.
struct BlueZModelTests {
    static let adapter = "/org/bluez/hci0"
    static let device = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01"

    static func properties(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: "s", value: "v", Dictionary(uniqueKeysWithValues: entries.map { (DBusValue.string($0.key), DBusValue.variant($0.value)) }))
    }

    static func interfaces(_ entries: [String: [String: DBusValue]]) -> DBusValue {
        .dictionary(
            key: "s", value: "a{sv}", Dictionary(uniqueKeysWithValues: entries.map { (DBusValue.string($0.key), properties($0.value)) }))
    }

    static let adapterInterfaces = ["org.bluez.Adapter1": ["Powered": DBusValue.boolean(true)]]
    static let deviceInterfaces = ["org.bluez.Device1": ["Address": DBusValue.string("AA:BB:CC:DD:EE:01")]]

    /// A `GetManagedObjects` reply holding `objects`.
    static func tree(_ objects: [String: [String: [String: DBusValue]]]) -> DBusValue {
        .dictionary(
            key: "o", value: "a{sa{sv}}",
            Dictionary(uniqueKeysWithValues: objects.map { (DBusValue.objectPath($0.key), interfaces($0.value)) }))
    }

    static func added(_ path: String, _ entries: [String: [String: DBusValue]]) -> DBusSignal {
        DBusSignal(
            path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
            arguments: [.objectPath(path), interfaces(entries)])
    }

    static func removed(_ path: String, _ names: [String]) -> DBusSignal {
        DBusSignal(
            path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
            arguments: [.objectPath(path), .array(element: "s", names.map { .string($0) })])
    }

    /// The bus reads the board's announcement after the reply was sent, but the asking task
    /// applies the reply only later: the board must not be undone by the older tree. (The
    /// BLE integration test once waited 20 s for a board so lost.)
    @Test func aBoardAnnouncedWhileTheTreeIsOnItsWayIsKept() {
        let model = BlueZModel()
        model.beginSnapshot()
        model.apply(Self.added(Self.device, Self.deviceInterfaces))
        model.reset(from: Self.tree([Self.adapter: Self.adapterInterfaces]))
        #expect(model.objects[Self.device]?["org.bluez.Device1"]?["Address"]?.stringValue == "AA:BB:CC:DD:EE:01")
        #expect(model.objects[Self.adapter] != nil)
    }

    /// The same for a board that went away meanwhile: the reply still lists it, the removal wins.
    @Test func aBoardRemovedWhileTheTreeIsOnItsWayStaysRemoved() {
        let model = BlueZModel()
        model.beginSnapshot()
        model.apply(Self.removed(Self.device, ["org.bluez.Device1"]))
        model.reset(from: Self.tree([Self.adapter: Self.adapterInterfaces, Self.device: Self.deviceInterfaces]))
        #expect(model.objects[Self.device] == nil)
    }

    /// Signals replayed over a reply that already holds them change nothing, and once the
    /// reply is in, later replies are the tree as they say.
    @Test func aReplayedSignalTheReplyHoldsChangesNothingAndTheJournalEnds() {
        let model = BlueZModel()
        model.beginSnapshot()
        model.apply(Self.added(Self.device, Self.deviceInterfaces))
        model.reset(from: Self.tree([Self.adapter: Self.adapterInterfaces, Self.device: Self.deviceInterfaces]))
        #expect(model.objects.count == 2)
        model.apply(Self.removed(Self.device, ["org.bluez.Device1"]))
        model.reset(from: Self.tree([Self.adapter: Self.adapterInterfaces, Self.device: Self.deviceInterfaces]))
        #expect(model.objects[Self.device] != nil, "no snapshot under way: the reply is the tree")
    }

    /// BlueZ leaving the bus empties the tree; what it said before is not replayed later.
    @Test func blueZLeavingForgetsWhatItSaidBefore() {
        let model = BlueZModel()
        model.beginSnapshot()
        model.apply(Self.added(Self.device, Self.deviceInterfaces))
        model.reset(from: nil)
        #expect(model.objects.isEmpty)
        model.reset(from: Self.tree([Self.adapter: Self.adapterInterfaces]))
        #expect(model.objects[Self.device] == nil)
    }
}
