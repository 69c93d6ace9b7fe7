import QeoQDM
import QeoRealm
import SwitchyardCore
import SwitchyardPluginKit

/// One qeo instance's settings: the QDM types, the realm identity, the topics it reads and writes.
struct QeoConfiguration: Sendable {
    var model: QDMModel
    var domain: UInt32
    var realm: UInt64
    var user: UInt64
    var device: UInt64
    var read: [QDMStruct]
    var write: [QDMStruct]
    /// The `dds.sec.*` participant properties of a secured realm; empty on an open domain.
    var securityProperties: [(name: String, value: String)] = []

    init(config: JSONValue) throws {
        let topics = try QeoTopics(config: config)
        model = topics.model
        guard let domain = UInt32(exactly: config["domain"]?.intValue ?? 128) else {
            throw PluginError("domain: \(config["domain"]?.text ?? "") is not a DDS domain id (0…232)")
        }
        self.domain = domain
        realm = try Self.identifier(config["realm"], "realm")
        user = try Self.identifier(config["user"], "user")
        device = try Self.identifier(config["device"], "device")
        read = topics.read
        write = topics.write
        if let security = config["security"] {
            try secure(security, config: config)
        }
    }

    /// Reads `security:` — a device directory from `switchyard qeo realm add-device`, or
    /// `{credentials: DIR, libraries: DIR}` — and takes the realm, user, device and domain from it;
    /// ids also given in the configuration must agree.
    private mutating func secure(_ security: JSONValue, config: JSONValue) throws {
        guard let directory = security.stringValue ?? security["credentials"]?.stringValue else {
            throw PluginError("security: give the device credentials directory (`switchyard qeo realm add-device` prints it)")
        }
        let credentials: DeviceCredentials
        do {
            credentials = try DeviceCredentials(directory: directory)
        } catch {
            throw PluginError("security: \(error)")
        }
        let identity = credentials.identity
        for (name, configured, actual) in [
            ("realm", realm, identity.realm), ("user", user, identity.user), ("device", device, identity.device),
        ] where config[name] != nil && configured != actual {
            throw PluginError(
                "\(name): 0x\(QeoIdentifier.hex(configured)) differs from 0x\(QeoIdentifier.hex(actual)) of the credentials in \(directory)"
            )
        }
        if config["domain"] != nil, domain != identity.domain {
            throw PluginError("domain: \(domain) differs from the realm's domain \(identity.domain) (credentials in \(directory))")
        }
        (realm, user, device, domain) = (identity.realm, identity.user, identity.device, identity.domain)
        guard let libraries = security["libraries"]?.stringValue ?? DeviceCredentials.defaultLibraryDirectory() else {
            throw PluginError(
                "security: Cyclone DDS's security plugins (libdds_security_auth.so) are not installed; install libddsc0debian or set security.libraries"
            )
        }
        securityProperties = credentials.participantProperties(libraries: libraries)
    }

    /// Qeo's participant name: `<rid:%x><did:%x><uid:%x>`.
    var participantName: String {
        "<rid:\(QeoIdentifier.hex(realm))><did:\(QeoIdentifier.hex(device))><uid:\(QeoIdentifier.hex(user))>"
    }

    /// A 64-bit id: a number, or a string in decimal or 0x-hex.
    static func identifier(_ value: JSONValue?, _ name: String) throws -> UInt64 {
        switch value {
        case nil: return 0
        case .int(let number)? where number >= 0: return UInt64(number)
        case .string(let text)?:
            guard let parsed = QeoIdentifier.parse(text) else {
                throw PluginError("\(name): '\(text)' is not a 64-bit number (decimal or 0x-hex)")
            }
            return parsed
        case let other?: throw PluginError("\(name): \(other.text) is not a 64-bit number (decimal or 0x-hex)")
        }
    }
}
