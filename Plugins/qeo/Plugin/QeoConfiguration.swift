import QeoEnrollment
import QeoQDM
import QeoRealm
import QeoWake
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
    /// The device credentials directory of a secured realm (`security:`), nil on an open domain:
    /// the realm directory around it holds the policy the instance's pieces are checked against.
    var credentials: String?
    /// The realm's enrollment endpoint, when this instance serves it.
    var enroll: EnrollmentSettings?
    /// The state topics whose changes wake members' apps.
    var wake: WakeSettings?

    /// Decodes the settings (``QeoSettings``), then loads the QDM files (``QeoTopics``).
    init(config: JSONValue) throws {
        let settings = try QeoSettings(config: config)
        let topics = try QeoTopics(config: config)
        (model, read, write) = (topics.model, topics.read, topics.write)
        domain = settings.domain ?? 128
        realm = settings.realm?.value ?? 0
        user = settings.user?.value ?? 0
        device = settings.device?.value ?? 0
        enroll = settings.enroll
        wake = settings.wake
        if let wake = settings.wake {
            guard enroll != nil else {
                throw PluginError("/wake: needs enroll: (its endpoint serves the feed, its realm says who reads a topic)")
            }
            for topic in wake.topics {
                guard let item = read.first(where: { $0.name == QeoTopics.qdmName(of: topic, in: model) }) else {
                    throw PluginError("/wake/topics: \(topic) is not a topic in read")
                }
                guard item.behavior == .state else { throw PluginError("/wake/topics: \(topic) is an event topic, not state") }
            }
            self.wake?.topics = wake.topics.map { QeoTopics.qdmName(of: $0, in: model) }
        }
        if let security = settings.security { try secure(security, settings: settings) }
    }

    /// Reads `security:` — a device directory from `switchyard qeo realm add-device`, or
    /// `{credentials: DIR, libraries: DIR}` — and takes the realm, user, device and domain from it;
    /// ids also given in the configuration must agree.
    private mutating func secure(_ security: QeoSettings.Security, settings: QeoSettings) throws {
        let directory = security.credentials
        let credentials: DeviceCredentials
        do {
            credentials = try DeviceCredentials(directory: directory)
        } catch {
            throw PluginError("/security: \(error)")
        }
        let identity = credentials.identity
        for (name, configured, actual) in [
            ("realm", settings.realm, identity.realm), ("user", settings.user, identity.user), ("device", settings.device, identity.device),
        ] {
            if let configured, configured.value != actual {
                throw PluginError(
                    "/\(name): 0x\(QeoIdentifier.hex(configured.value)) differs from 0x\(QeoIdentifier.hex(actual)) of the credentials in \(directory)"
                )
            }
        }
        if let domain = settings.domain, domain != identity.domain {
            throw PluginError("/domain: \(domain) differs from the realm's domain \(identity.domain) (credentials in \(directory))")
        }
        (realm, user, device, domain) = (identity.realm, identity.user, identity.device, identity.domain)
        self.credentials = credentials.directory
        guard let libraries = security.libraries ?? DeviceCredentials.defaultLibraryDirectory() else {
            throw PluginError(
                "/security: Cyclone DDS's security plugins (libdds_security_auth.so) are not installed; install libddsc0debian or set security.libraries"
            )
        }
        securityProperties = credentials.participantProperties(libraries: libraries)
    }

    /// Qeo's participant name: `<rid:%x><did:%x><uid:%x>`.
    var participantName: String {
        "<rid:\(QeoIdentifier.hex(realm))><did:\(QeoIdentifier.hex(device))><uid:\(QeoIdentifier.hex(user))>"
    }
}

/// A qeo instance's configuration as written; the manifest's schema is derived from it. The QDM
/// files and the topics of `read` and `write` are resolved by ``QeoTopics``.
struct QeoSettings: PluginConfiguration {
    /// `qdm:`, one file or a list.
    var qdm: QDMFiles
    var domain: UInt32?
    var realm: Identifier?
    var user: Identifier?
    var device: Identifier?
    var read: [String]
    var write: [String]
    var security: Security?
    var enroll: EnrollmentSettings?
    var wake: WakeSettings?

    static let descriptions = [
        "/wake": "wake members' apps (a qeo.Wake on the wakes port) when a watched state topic changes; needs enroll",
        "/wake/topics": "state topics in read whose changes wake the users allowed to read them",
        "/wake/store": "the feed's SQLite file (default: wake.sqlite in the realm directory)",
        "/enroll": "serve the realm's enrollment endpoint (HTTPS): one-time codes, permission renewal",
        "/enroll/listen": "HOST:PORT of the enrollment endpoint (port 0 picks a free one)",
        "/enroll/realm": "the realm directory of `switchyard qeo realm init` (holds the CA key)",
        "/enroll/lease": "how long an enrolled device's permissions stay valid before it renews them (default 1h)",
        "/qdm": "QDM files (relative to the route file's folder)",
        "/security":
            "a secured realm: the device credentials directory of `switchyard qeo realm add-device`, or {credentials, libraries}",
    ]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        qdm = try container.decode(QDMFiles.self, forKey: .qdm)
        domain = try container.decodeIfPresent(.domain, in: 0...232)
        realm = try container.decodeIfPresent(Identifier.self, forKey: .realm)
        user = try container.decodeIfPresent(Identifier.self, forKey: .user)
        device = try container.decodeIfPresent(Identifier.self, forKey: .device)
        read = try container.decode(.read, default: [])
        write = try container.decode(.write, default: [])
        security = try container.decodeIfPresent(Security.self, forKey: .security)
        enroll = try container.decodeIfPresent(EnrollmentSettings.self, forKey: .enroll)
        wake = try container.decodeIfPresent(WakeSettings.self, forKey: .wake)
    }

    private enum CodingKeys: CodingKey { case qdm, domain, realm, user, device, read, write, security, enroll, wake }

    /// `qdm:`: a file, or a list of files.
    struct QDMFiles: ConfigurationValue {
        var files: [String]

        init(from decoder: any Decoder) throws {
            let value = try ConfigurationJSON(from: decoder).value
            let files = value.stringValue.map { [$0] } ?? value.arrayValue?.compactMap(\.stringValue)
            guard let files, files.count == value.arrayValue?.count ?? 1 else {
                throw ConfigurationError(decoder, "give a QDM file or a list of them")
            }
            self.files = files
        }

        private init(files: [String]) { self.files = files }

        static let configurationSchema: JSONValue = [
            "type": ["string", "array"], "format": "path", "items": ["type": "string", "format": "path"],
        ]
        static var schemaPlaceholder: Self { Self(files: []) }
    }

    /// A 64-bit id: a number, or a string in decimal or 0x-hex.
    struct Identifier: ConfigurationValue {
        var value: UInt64

        init(from decoder: any Decoder) throws {
            switch try ConfigurationJSON(from: decoder).value {
            case .int(let number) where number >= 0: value = UInt64(number)
            case .string(let text):
                guard let parsed = QeoIdentifier.parse(text) else {
                    throw ConfigurationError(decoder, "'\(text)' is not a 64-bit number (decimal or 0x-hex)")
                }
                value = parsed
            case let other: throw ConfigurationError(decoder, "\(other.text) is not a 64-bit number (decimal or 0x-hex)")
            }
        }

        private init(value: UInt64) { self.value = value }

        static let configurationSchema: JSONValue = ["type": ["integer", "string"]]
        static var schemaPlaceholder: Self { Self(value: 0) }
    }

    /// `security:`, a credentials directory or `{credentials, libraries}`.
    struct Security: ConfigurationValue {
        var credentials = ""
        var libraries: String?

        init(from decoder: any Decoder) throws {
            if let directory = try ConfigurationJSON(from: decoder).value.stringValue {
                credentials = directory
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard let directory = try container.decodeIfPresent(ConfigurationPath.self, forKey: .credentials)?.path else {
                throw ConfigurationError(decoder, "give the device credentials directory (`switchyard qeo realm add-device` prints it)")
            }
            credentials = directory
            libraries = try container.decodeIfPresent(ConfigurationPath.self, forKey: .libraries)?.path
        }

        private init() {}

        private enum CodingKeys: CodingKey { case credentials, libraries }

        /// The short form is the credentials directory, a path like the long form's.
        static var configurationSchema: JSONValue {
            guard case .object(var schema) = ConfigurationSchema.of(Self.self, orAlso: "string") else { return [:] }
            schema["format"] = "path"
            return .object(schema)
        }
        static var schemaPlaceholder: Self { Self() }
    }
}
