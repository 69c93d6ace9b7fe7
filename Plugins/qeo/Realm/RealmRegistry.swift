public import Foundation

/// `realm.json`: the realm id, domain and members.
public struct RealmRegistry: Codable, Sendable {
    /// The registry's file in a realm directory.
    public static let fileName = "realm.json"

    public var realm: UInt64
    public var name: String
    public var domain: UInt32
    public var users: [User]
    public var devices: [Device]
    /// The number of the last revocation list issued (`crl.pem`), 0 before the first.
    public var revocationListNumber: UInt64?

    /// A realm user.
    public struct User: Codable, Sendable {
        public var id: UInt64
        public var name: String
        /// When the user was revoked: none of its devices may join, no code of it is honoured.
        public var revoked: Date?
    }

    /// A device of a user.
    public struct Device: Codable, Sendable {
        public var id: UInt64
        public var user: UInt64
        public var name: String
        /// Its certificate's serial number (what the revocation list names); read from the
        /// certificate for devices added before serials were recorded.
        public var serial: UInt64?
        /// When the device was revoked.
        public var revoked: Date?
        /// For a device that enrolled with a one-time code: the end of its permissions lease,
        /// which it renews through the enrollment endpoint.
        public var leaseUntil: Date?

        public init(id: UInt64, user: UInt64, name: String, serial: UInt64? = nil, leaseUntil: Date? = nil) {
            self.id = id
            self.user = user
            self.name = name
            self.serial = serial
            self.leaseUntil = leaseUntil
        }
    }

    /// The device's user, when neither was revoked.
    public func member(device id: UInt64) -> (device: Device, user: User)? {
        guard let device = devices.first(where: { $0.id == id }), device.revoked == nil,
            let user = users.first(where: { $0.id == device.user }), user.revoked == nil
        else { return nil }
        return (device, user)
    }

    static func load(from file: URL) throws(RealmError) -> RealmRegistry {
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(RealmRegistry.self, from: Data(contentsOf: file))
        } catch let error as DecodingError {
            throw RealmError("\(file.path): not a realm registry (\(error))")
        } catch {
            throw RealmError(
                "\(file.deletingLastPathComponent().path) is not a realm directory: \(file.path) cannot be read (\(error.localizedDescription); `switchyard qeo realm init` makes one)"
            )
        }
    }

    func save(to file: URL) throws(RealmError) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try encoder.encode(self).write(to: file, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        } catch {
            throw RealmError("writing \(file.path): \(error)")
        }
    }
}
