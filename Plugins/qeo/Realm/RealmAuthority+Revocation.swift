public import Foundation

extension RealmAuthority {
    /// The realm's certificate revocation list, in the realm directory and every device's.
    public static let revocationListFile = "crl.pem"

    /// Revokes a device: its certificate goes on the revocation list, its grant leaves the
    /// permissions, and the enrollment endpoint stops renewing its lease. Returns the device.
    /// Call with the realm's lock held (``RealmLock``).
    public mutating func revoke(device id: UInt64, now: Date = Date()) throws(RealmError) -> RealmRegistry.Device {
        guard let index = registry.devices.firstIndex(where: { $0.id == id }) else {
            throw RealmError("device \(QeoIdentifier.hex(id)) is not in realm \(QeoIdentifier.hex(registry.realm))")
        }
        guard registry.devices[index].revoked == nil else {
            throw RealmError("device \(QeoIdentifier.hex(id)) was already revoked")
        }
        registry.devices[index].revoked = now
        try publishRevocation()
        return registry.devices[index]
    }

    /// Revokes a user and every device of it; its codes are no longer honoured. Returns the
    /// devices revoked now.
    public mutating func revoke(user id: UInt64, now: Date = Date()) throws(RealmError) -> [RealmRegistry.Device] {
        guard let index = registry.users.firstIndex(where: { $0.id == id }) else {
            throw RealmError("user \(QeoIdentifier.hex(id)) is not in realm \(QeoIdentifier.hex(registry.realm))")
        }
        guard registry.users[index].revoked == nil else { throw RealmError("user \(QeoIdentifier.hex(id)) was already revoked") }
        registry.users[index].revoked = now
        var revoked: [RealmRegistry.Device] = []
        for device in registry.devices.indices where registry.devices[device].user == id && registry.devices[device].revoked == nil {
            registry.devices[device].revoked = now
            revoked.append(registry.devices[device])
        }
        try publishRevocation()
        return revoked
    }

    /// Writes the registry, a new revocation list and permissions without the revoked grants.
    private mutating func publishRevocation() throws(RealmError) {
        var revoked: [(serial: UInt64, at: Date)] = []
        for index in registry.devices.indices {
            guard
                let time = registry.devices[index].revoked
                    ?? registry.users.first(where: { $0.id == registry.devices[index].user })?.revoked
            else { continue }
            if registry.devices[index].serial == nil {
                let certificate = try RealmFiles.read(
                    deviceDirectory(registry.devices[index]).appendingPathComponent(DeviceCredentials.certificateFile))
                registry.devices[index].serial = try RealmCrypto.facts(ofCertificate: certificate).serial
            }
            revoked.append((registry.devices[index].serial ?? 0, time))
        }
        let number = (registry.revocationListNumber ?? 0) + 1
        let list = try RealmCrypto.revocationList(
            revoked: revoked, authority: (try files.read("ca.pem"), try files.read("ca.key")), seconds: Self.validityDays * 86400,
            number: number)
        registry.revocationListNumber = number
        try saveRegistry()
        try RealmFiles.write(list, to: directory.appendingPathComponent(Self.revocationListFile))
        try publishDocuments()
    }
}
