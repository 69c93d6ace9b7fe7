public import Foundation

extension RealmAuthority {
    /// Issues a one-time code with which a new device of `user` named `deviceName` enrolls,
    /// valid for `lifetime` seconds. Call with the realm's lock held (``RealmLock``).
    public mutating func issueCode(
        user: UInt64, deviceName: String, lifetime: TimeInterval, now: Date = Date()
    ) throws(RealmError) -> (code: String, expires: Date) {
        guard let member = registry.users.first(where: { $0.id == user }) else {
            throw RealmError("user \(QeoIdentifier.hex(user)) is not in realm \(QeoIdentifier.hex(registry.realm))")
        }
        guard member.revoked == nil else { throw RealmError("user \(QeoIdentifier.hex(user)) (\(member.name)) was revoked") }
        var codes = try EnrollmentCodes.load(from: directory)
        codes.forgetOld(now: now)
        let code = EnrollmentCode.generate()
        let expires = now.addingTimeInterval(lifetime)
        codes.codes.append(
            .init(
                digest: RealmCrypto.sha256(EnrollmentCode.normalised(code) ?? code), user: user, deviceName: deviceName, issued: now,
                expires: expires))
        try codes.save(to: directory)
        return (code, expires)
    }

    /// Exchanges a one-time code and a PKCS #10 request for a new device's credentials, with
    /// permissions valid for `leaseSeconds`. The code is spent only when the device is made.
    /// Call with the realm's lock held.
    public mutating func enroll(
        code text: String, request: String, leaseSeconds: Int, now: Date = Date()
    ) throws(EnrollmentRefusal) -> Enrollment {
        guard let code = EnrollmentCode.normalised(text) else { throw .unknownCode }
        var codes = try Self.refusing { () throws(RealmError) in try EnrollmentCodes.load(from: directory) }
        let digest = RealmCrypto.sha256(code)
        guard let index = codes.codes.firstIndex(where: { $0.digest == digest }) else { throw .unknownCode }
        let entry = codes.codes[index]
        if let used = entry.used { throw .usedCode(used) }
        guard entry.expires > now else { throw .expiredCode(entry.expires) }
        guard let user = registry.users.first(where: { $0.id == entry.user }), user.revoked == nil else { throw .revoked }
        let id = try Self.refusing { () throws(RealmError) in try Self.identifier(nil, after: registry.devices.map(\.id), what: "device") }
        let certificate = try Self.refusing { () throws(RealmError) in
            try RealmCrypto.issueCertificate(
                forRequest: request, subject: deviceSubject(device: id, user: user.id),
                issuer: (try files.read("ca.pem"), try files.read("ca.key")),
                seconds: Self.validityDays * 86400, serial: UInt64.random(in: 1...UInt64.max))
        } invalid: {
            "certificate request: \($0)"
        }
        let lease = now.addingTimeInterval(Double(leaseSeconds))
        let facts = try Self.refusing { () throws(RealmError) in try RealmCrypto.facts(ofCertificate: certificate) }
        let device = RealmRegistry.Device(id: id, user: user.id, name: entry.deviceName, serial: facts.serial, leaseUntil: lease)
        try Self.refusing { () throws(RealmError) in
            // The code is spent first: if what follows fails, it cannot make a second device.
            codes.codes[index].used = now
            codes.codes[index].device = id
            try codes.save(to: directory)
            let identity = DeviceCredentials.Identity(realm: registry.realm, user: user.id, device: id, domain: registry.domain)
            try RealmFiles.write(certificate, to: deviceDirectory(device).appendingPathComponent(DeviceCredentials.certificateFile))
            try RealmFiles.write(identity.json, to: deviceDirectory(device).appendingPathComponent(DeviceCredentials.identityFile))
            registry.devices.append(device)
            try saveRegistry()
            try publishDocuments()
        }
        return try credentials(of: device, certificate: certificate)
    }

    /// Fresh permissions for an enrolled device, valid for `leaseSeconds` from now, when it and
    /// its user are not revoked and `serial` is its certificate's. Call with the lock held.
    public mutating func renew(device id: UInt64, serial: UInt64, leaseSeconds: Int, now: Date = Date()) throws(EnrollmentRefusal)
        -> Enrollment
    {
        guard let index = registry.devices.firstIndex(where: { $0.id == id }) else {
            throw .invalid("device \(QeoIdentifier.hex(id)) is not in this realm")
        }
        guard registry.member(device: id) != nil else { throw .revoked }
        let certificate = try Self.refusing { () throws(RealmError) in
            try RealmFiles.read(deviceDirectory(registry.devices[index]).appendingPathComponent(DeviceCredentials.certificateFile))
        }
        let facts = try Self.refusing { () throws(RealmError) in try RealmCrypto.facts(ofCertificate: certificate) }
        guard facts.serial == serial else { throw .revoked }
        if registry.devices[index].leaseUntil != nil {
            registry.devices[index].leaseUntil = now.addingTimeInterval(Double(leaseSeconds))
            try Self.refusing { () throws(RealmError) in try saveRegistry() }
        }
        return try credentials(of: registry.devices[index], certificate: certificate)
    }

    /// The realm CA's certificate (PEM).
    public func certificateAuthority() throws(RealmError) -> String { try files.read("ca.pem") }

    /// A new TLS server certificate and key for the realm's enrollment endpoint, issued by the
    /// realm CA for `alternativeNames` (`IP:127.0.0.1,DNS:host`) and valid for 30 days, with the
    /// CA certificate a device checks it against.
    public func endpointCertificate(alternativeNames: String) throws(RealmError) -> (certificate: String, key: String, authority: String) {
        let key = try RealmCrypto.generateKey()
        let authority = try files.read("ca.pem")
        let certificate = try RealmCrypto.issueCertificate(
            key: key, subject: [("O", "Qeo"), ("CN", "\(QeoIdentifier.hex(registry.realm)) enrollment")],
            issuer: (authority, try files.read("ca.key")), role: .server, seconds: 30 * 86400, serial: UInt64.random(in: 1...UInt64.max),
            alternativeNames: alternativeNames)
        return (certificate, key, authority)
    }

    /// Permissions with the one grant of `device` (its lease as their end), signed: what a
    /// peer judges the device by when it presents them.
    func permissions(of device: RealmRegistry.Device, certificate: String) throws(RealmError) -> String {
        let policy = try QeoPolicy(parsing: try policyText(), file: directory.appendingPathComponent("policy").path)
        let grant = SecurityDocuments.Grant(
            name: "device \(QeoIdentifier.hex(device.id)) of user \(QeoIdentifier.hex(device.user))",
            subject: try RealmCrypto.subject(ofCertificate: certificate), rules: policy.rules(realm: registry.realm, user: device.user),
            notAfter: device.leaseUntil)
        let now = Date()
        let document = SecurityDocuments.permissions(
            domain: registry.domain, grants: [grant], notBefore: now.addingTimeInterval(-3600),
            notAfter: now.addingTimeInterval(Double(Self.validityDays) * 86400))
        return try RealmCrypto.sign(document, certificate: try files.read("ca.pem"), key: try files.read("ca.key"))
    }

    /// Qeo's certificate name of a device: `CN=<rid> <did> <uid>,O=Qeo` in hex.
    func deviceSubject(device: UInt64, user: UInt64) -> [(field: String, value: String)] {
        [("O", "Qeo"), ("CN", "\(QeoIdentifier.hex(registry.realm)) \(QeoIdentifier.hex(device)) \(QeoIdentifier.hex(user))")]
    }

    private func credentials(of device: RealmRegistry.Device, certificate: String) throws(EnrollmentRefusal) -> Enrollment {
        try Self.refusing { () throws(RealmError) in
            let revocationList = directory.appendingPathComponent(Self.revocationListFile)
            return Enrollment(
                identity: DeviceCredentials.Identity(realm: registry.realm, user: device.user, device: device.id, domain: registry.domain),
                certificate: certificate, authority: try files.read("ca.pem"), governance: try files.read(DeviceCredentials.governanceFile),
                permissions: try permissions(of: device, certificate: certificate),
                leaseUntil: device.leaseUntil ?? Date().addingTimeInterval(Double(Self.validityDays) * 86400),
                revocationList: FileManager.default.fileExists(atPath: revocationList.path) ? try RealmFiles.read(revocationList) : nil)
        }
    }

    /// Runs realm work for an enrollment: a failure of the realm's own files is an internal
    /// error, unless `invalid` says the requester caused it.
    private static func refusing<Result>(
        _ body: () throws(RealmError) -> Result, invalid: ((RealmError) -> String)? = nil
    ) throws(EnrollmentRefusal) -> Result {
        do {
            return try body()
        } catch {
            if let invalid { throw .invalid(invalid(error)) }
            throw .failed(error.description)
        }
    }
}
