import Foundation

/// The Slate+ board the BlueZ double poses as: its address, its GATT layout, and adding it to
/// the double. Separate from the ble suite because the scripts suite, in another target,
/// feeds the same board's bytes through a script.
enum SlateBoard {
    /// The board's Bluetooth address and its BlueZ object path.
    static let address = "AA:BB:CC:DD:EE:01"
    static let device = "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01"
    /// The Slate+ GATT service and its characteristics: two buttons, the display.
    static let service = "4e1c0001-5a1d-4f0e-9b7a-52695656e7a0"
    static let button1 = "4e1c0002-5a1d-4f0e-9b7a-52695656e7a0"
    static let button2 = "4e1c0003-5a1d-4f0e-9b7a-52695656e7a0"
    static let display = "4e1c0004-5a1d-4f0e-9b7a-52695656e7a0"
    /// Object paths of button 1 and the display characteristics, where the double notifies and records writes.
    static let button1Path = device + "/service0010/char0011"
    static let displayPath = device + "/service0010/char0013"

    /// An adapter and the board, with `service` (the Slate+ layout unless told otherwise).
    static func add(to double: BlueZDouble, service: String = service, withAdapter: Bool = true) throws {
        if withAdapter { try double.control("org.bluez.Mock.AddAdapter", ["hci0", "switchyard"]) }
        // The layout first: the device is connectable the moment it appears.
        try double.control(
            "org.bluez.Mock.AddGattLayout",
            [
                device, service,
                "[('\(button1)', ['notify']), ('\(button2)', ['notify']), ('\(display)', ['write', 'write-without-response'])]",
            ])
        try double.control("org.bluez.Mock.AddDevice", ["hci0", address, "Slate+"])
    }
}
