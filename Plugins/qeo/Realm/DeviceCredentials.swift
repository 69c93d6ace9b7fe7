import Foundation

/// What one realm device needs to join its realm's secured DDS domain: the realm CA, its key and
/// certificate, the signed governance and permissions, and `device.json` with its ids — the
/// directory `switchyard qeo realm add-device` writes.
public struct DeviceCredentials: Sendable {
    static let authorityFile = "ca.pem"
    static let certificateFile = "device.pem"
    static let keyFile = "device.key"
    static let governanceFile = "governance.p7s"
    static let permissionsFile = "permissions.p7s"
    static let identityFile = "device.json"

    /// A device's ids and its realm's domain.
    public struct Identity: Codable, Sendable, Equatable {
        public var realm: UInt64
        public var user: UInt64
        public var device: UInt64
        public var domain: UInt32

        enum CodingKeys: String, CodingKey { case realm, user, device, domain }

        public init(realm: UInt64, user: UInt64, device: UInt64, domain: UInt32) {
            self.realm = realm
            self.user = user
            self.device = device
            self.domain = domain
        }

        // Ids as 0x-hex strings: a 64-bit id does not survive JSON readers that use doubles.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            func id(_ key: CodingKeys) throws -> UInt64 {
                let text = try container.decode(String.self, forKey: key)
                guard text.hasPrefix("0x"), let value = UInt64(text.dropFirst(2), radix: 16) else {
                    throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "'\(text)' is not 0x-hex")
                }
                return value
            }
            realm = try id(.realm)
            user = try id(.user)
            device = try id(.device)
            domain = try container.decode(UInt32.self, forKey: .domain)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode("0x" + QeoIdentifier.hex(realm), forKey: .realm)
            try container.encode("0x" + QeoIdentifier.hex(user), forKey: .user)
            try container.encode("0x" + QeoIdentifier.hex(device), forKey: .device)
            try container.encode(domain, forKey: .domain)
        }
    }

    /// The credentials directory.
    public let directory: String
    /// The device's ids.
    public let identity: Identity

    /// Reads a device directory, checking every file is there.
    public init(directory: String) throws(RealmError) {
        let url = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        self.directory = url.path
        let identityFile = url.appendingPathComponent(Self.identityFile)
        do {
            identity = try JSONDecoder().decode(Identity.self, from: Data(contentsOf: identityFile))
        } catch let error as DecodingError {
            throw RealmError("\(identityFile.path): not a device identity (\(error))")
        } catch {
            throw RealmError(
                "\(directory) holds no device credentials: \(identityFile.path) cannot be read (\(error.localizedDescription); `switchyard qeo realm add-device` writes them)"
            )
        }
        for file in [Self.authorityFile, Self.certificateFile, Self.keyFile, Self.governanceFile, Self.permissionsFile]
        where !FileManager.default.isReadableFile(atPath: url.appendingPathComponent(file).path) {
            throw RealmError("\(url.appendingPathComponent(file).path) is missing or unreadable")
        }
    }

    /// The participant QoS properties that turn on Cyclone DDS's security plugins with these
    /// credentials; the plugins are loaded from `libraries`.
    public func participantProperties(libraries: String) -> [(name: String, value: String)] {
        func file(_ name: String) -> String { "file:" + directory + "/" + name }
        var properties: [(name: String, value: String)] = []
        for (plugin, library, function) in [
            ("auth", "auth", "authentication"), ("crypto", "crypto", "crypto"), ("access", "ac", "access_control"),
        ] {
            properties.append(("dds.sec.\(plugin).library.path", libraries + "/libdds_security_\(library).so"))
            properties.append(("dds.sec.\(plugin).library.init", "init_\(function)"))
            properties.append(("dds.sec.\(plugin).library.finalize", "finalize_\(function)"))
        }
        properties += [
            ("dds.sec.auth.identity_ca", file(Self.authorityFile)),
            ("dds.sec.auth.identity_certificate", file(Self.certificateFile)),
            ("dds.sec.auth.private_key", file(Self.keyFile)),
            ("dds.sec.access.permissions_ca", file(Self.authorityFile)),
            ("dds.sec.access.governance", file(Self.governanceFile)),
            ("dds.sec.access.permissions", file(Self.permissionsFile)),
        ]
        // The realm's revocation list, once a member was revoked: Cyclone reads it when the
        // participant is created and refuses handshakes with the certificates it lists.
        if FileManager.default.isReadableFile(atPath: directory + "/" + RealmAuthority.revocationListFile) {
            properties.append(("org.eclipse.cyclonedds.sec.auth.crl", file(RealmAuthority.revocationListFile)))
        }
        return properties
    }

    /// Where Debian's libddsc keeps the DDS Security plugins, if this machine has them.
    public static func defaultLibraryDirectory() -> String? {
        let base = "/usr/lib"
        let candidates =
            ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).sorted().map { "\(base)/\($0)/libddsc0debian" }
            + ["\(base)/libddsc0debian", "/usr/local/lib", base]
        return candidates.first { FileManager.default.fileExists(atPath: "\($0)/libdds_security_auth.so") }
    }
}

extension DeviceCredentials.Identity {
    /// `device.json` as written into a device directory.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
