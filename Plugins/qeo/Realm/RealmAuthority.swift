public import Foundation

/// A realm's authority: a directory holding the realm CA, its members, the Qeo policy and the
/// signed DDS Security documents, plus one directory per device with exactly what that device
/// needs (`devices/<did>/`).
///
/// The realm CA is both the identity CA and the permissions CA. Device certificates are named as
/// Qeo named them: `CN=<rid> <did> <uid>,O=Qeo` (hex ids).
public struct RealmAuthority: Sendable {
    /// The realm directory's files, read and written as the realm keeps them.
    let files: RealmFiles
    /// The realm directory.
    public var directory: URL { files.directory }
    /// The realm's members and settings (`realm.json`).
    public internal(set) var registry: RealmRegistry

    /// How long certificates and permissions stay valid.
    static let validityDays = 3650

    /// Opens an existing realm directory.
    public init(directory: String) throws(RealmError) {
        files = RealmFiles(directory: URL(fileURLWithPath: directory, isDirectory: true))
        registry = try RealmRegistry.load(from: files.directory.appendingPathComponent(RealmRegistry.fileName))
    }

    /// Creates a realm in `directory` (which must not hold one): its CA, the initial policy
    /// (every member reads and writes every topic) and the signed documents.
    @discardableResult
    public static func create(directory: String, realm: UInt64?, name: String, domain: UInt32) throws(RealmError) -> RealmAuthority {
        let url = URL(fileURLWithPath: directory, isDirectory: true)
        let registryFile = url.appendingPathComponent(RealmRegistry.fileName)
        guard !FileManager.default.fileExists(atPath: registryFile.path) else {
            throw RealmError("\(directory) already holds a realm (\(registryFile.path))")
        }
        guard domain <= 230 else { throw RealmError("domain \(domain): DDS Security takes domains 0…230") }
        let realm = realm ?? UInt64.random(in: 1...UInt64.max)
        let key = try RealmCrypto.generateKey()
        let certificate = try RealmCrypto.issueCertificate(
            key: key, subject: [("O", "Qeo"), ("OU", QeoIdentifier.hex(realm)), ("CN", "\(QeoIdentifier.hex(realm)) realm CA")],
            issuer: nil,
            role: .authority, seconds: validityDays * 86400, serial: UInt64.random(in: 1...UInt64.max))
        try RealmFiles.write(key, to: url.appendingPathComponent("ca.key"), private: true)
        try RealmFiles.write(certificate, to: url.appendingPathComponent("ca.pem"))
        try RealmFiles.write(QeoPolicy.initial(realm: realm), to: url.appendingPathComponent("policy"))
        let registry = RealmRegistry(realm: realm, name: name, domain: domain, users: [], devices: [])
        try registry.save(to: registryFile)
        let authority = try RealmAuthority(directory: directory)
        try authority.publishDocuments()
        return authority
    }

    /// Adds a user; the id is the next free one unless given.
    public mutating func addUser(name: String, id: UInt64?) throws(RealmError) -> RealmRegistry.User {
        let id = try Self.identifier(id, after: registry.users.map(\.id), what: "user")
        if let existing = registry.users.first(where: { $0.id == id }) {
            throw RealmError("user \(QeoIdentifier.hex(id)) already exists (\(existing.name))")
        }
        let user = RealmRegistry.User(id: id, name: name)
        registry.users.append(user)
        try saveRegistry()
        return user
    }

    /// Adds a device of `user`: its key and certificate in `devices/<did>/` with copies of the CA
    /// and the signed documents, then re-signs the permissions with the new grant.
    public mutating func addDevice(user: UInt64, name: String, id: UInt64?) throws(RealmError) -> RealmRegistry.Device {
        guard registry.users.contains(where: { $0.id == user }) else {
            let known = registry.users.map { "\(QeoIdentifier.hex($0.id)) (\($0.name))" }.joined(separator: ", ")
            throw RealmError(
                "user \(QeoIdentifier.hex(user)) is not in realm \(QeoIdentifier.hex(registry.realm)) (users: \(known.isEmpty ? "none" : known))"
            )
        }
        let id = try Self.identifier(id, after: registry.devices.map(\.id), what: "device")
        if let existing = registry.devices.first(where: { $0.id == id }) {
            throw RealmError("device \(QeoIdentifier.hex(id)) already exists (\(existing.name))")
        }
        let key = try RealmCrypto.generateKey()
        let certificate = try RealmCrypto.issueCertificate(
            key: key,
            subject: [("O", "Qeo"), ("CN", "\(QeoIdentifier.hex(registry.realm)) \(QeoIdentifier.hex(id)) \(QeoIdentifier.hex(user))")],
            issuer: (try files.read("ca.pem"), try files.read("ca.key")), role: .device, seconds: Self.validityDays * 86400,
            serial: UInt64.random(in: 1...UInt64.max))
        let device = RealmRegistry.Device(id: id, user: user, name: name, serial: try RealmCrypto.facts(ofCertificate: certificate).serial)
        let folder = deviceDirectory(device)
        try RealmFiles.write(key, to: folder.appendingPathComponent(DeviceCredentials.keyFile), private: true)
        try RealmFiles.write(certificate, to: folder.appendingPathComponent(DeviceCredentials.certificateFile))
        let identity = DeviceCredentials.Identity(realm: registry.realm, user: user, device: id, domain: registry.domain)
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(identity).write(to: folder.appendingPathComponent(DeviceCredentials.identityFile))
        } catch {
            throw RealmError("writing \(folder.path)/\(DeviceCredentials.identityFile): \(error)")
        }
        registry.devices.append(device)
        try saveRegistry()
        try publishDocuments()
        return device
    }

    /// The given id, or one above the highest in use (1 for the first).
    static func identifier(_ given: UInt64?, after ids: [UInt64], what: String) throws(RealmError) -> UInt64 {
        if let given { return given }
        let (next, overflow) = (ids.max() ?? 0).addingReportingOverflow(1)
        guard !overflow else { throw RealmError("no \(what) id above 0x\(QeoIdentifier.hex(UInt64.max)) is free: give one with --id") }
        return next
    }

    /// The installed policy's text.
    public func policyText() throws(RealmError) -> String { try files.read("policy") }

    /// Installs a new policy after checking it names this realm and its users and has a higher
    /// sequence number than the installed one, then re-signs the permissions.
    public func installPolicy(_ text: String, file: String) throws(RealmError) {
        let policy = try QeoPolicy(parsing: text, file: file)
        let current = try QeoPolicy(parsing: try policyText(), file: directory.appendingPathComponent("policy").path)
        guard policy.sequenceNumber > current.sequenceNumber else {
            throw RealmError(
                "\(file): seqnr=\(policy.sequenceNumber) is not above the installed policy's \(current.sequenceNumber)")
        }
        for section in policy.sections {
            switch section.subject {
            case .realm(let id) where id != registry.realm:
                throw RealmError(
                    "\(file):\(section.line): [\(section.subject)] is not this realm (rid:\(QeoIdentifier.hex(registry.realm)))")
            case .user(let id) where !registry.users.contains(where: { $0.id == id }):
                throw RealmError("\(file):\(section.line): [\(section.subject)] is not a user of this realm")
            default: break
            }
        }
        // Signed first: a policy that cannot be published is not installed.
        try publishDocuments(policy: policy)
        try RealmFiles.write(text, to: directory.appendingPathComponent("policy"))
    }

    /// Writes and signs the governance and permissions documents and copies them, with the CA,
    /// into every device directory.
    public func publishDocuments() throws(RealmError) {
        try publishDocuments(policy: try QeoPolicy(parsing: try policyText(), file: directory.appendingPathComponent("policy").path))
    }

    func publishDocuments(policy: QeoPolicy) throws(RealmError) {
        let authority = (certificate: try files.read("ca.pem"), key: try files.read("ca.key"))
        var grants: [SecurityDocuments.Grant] = []
        // A revoked member has no grant: documents signed from now on do not let it in.
        for device in registry.devices where registry.member(device: device.id) != nil {
            let certificate = try RealmFiles.read(deviceDirectory(device).appendingPathComponent(DeviceCredentials.certificateFile))
            grants.append(
                SecurityDocuments.Grant(
                    name: "device \(QeoIdentifier.hex(device.id)) of user \(QeoIdentifier.hex(device.user))",
                    subject: try RealmCrypto.subject(ofCertificate: certificate),
                    rules: policy.rules(realm: registry.realm, user: device.user), notAfter: device.leaseUntil))
        }
        let now = Date()
        let governance = SecurityDocuments.governance(domain: registry.domain)
        let permissions = SecurityDocuments.permissions(
            domain: registry.domain, grants: grants, notBefore: now.addingTimeInterval(-3600),
            notAfter: now.addingTimeInterval(Double(Self.validityDays) * 86400))
        let signedGovernance = try RealmCrypto.sign(governance, certificate: authority.certificate, key: authority.key)
        let signedPermissions = try RealmCrypto.sign(permissions, certificate: authority.certificate, key: authority.key)
        try RealmFiles.write(governance, to: directory.appendingPathComponent("governance.xml"))
        try RealmFiles.write(permissions, to: directory.appendingPathComponent("permissions.xml"))
        for folder in [directory] + registry.devices.map(files.deviceDirectory) {
            try RealmFiles.write(signedGovernance, to: folder.appendingPathComponent(DeviceCredentials.governanceFile))
            try RealmFiles.write(signedPermissions, to: folder.appendingPathComponent(DeviceCredentials.permissionsFile))
        }
        let revocationList = directory.appendingPathComponent(Self.revocationListFile)
        let revocations = FileManager.default.fileExists(atPath: revocationList.path) ? try RealmFiles.read(revocationList) : nil
        for device in registry.devices {
            try RealmFiles.write(authority.certificate, to: deviceDirectory(device).appendingPathComponent(DeviceCredentials.authorityFile))
            if let revocations {
                try RealmFiles.write(revocations, to: deviceDirectory(device).appendingPathComponent(Self.revocationListFile))
            }
        }
    }

    /// Where a device's credentials live.
    public func deviceDirectory(_ device: RealmRegistry.Device) -> URL { files.deviceDirectory(device) }

    func saveRegistry() throws(RealmError) {
        try registry.save(to: directory.appendingPathComponent(RealmRegistry.fileName))
    }
}
