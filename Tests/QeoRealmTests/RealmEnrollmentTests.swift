import Foundation
import QeoRealm
import Testing

@Suite("Realm authority: one-time codes, enrollment, renewal, revocation")
struct RealmEnrollmentTests {
    let base = RealmAuthorityTests()

    /// A realm with user 1 and the router's device 1, and a PKCS #10 request made by openssl.
    func realm(_ scratch: RealmAuthorityTests.Scratch, key: [String] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"])
        throws -> (RealmAuthority, String)
    {
        var authority = try RealmAuthority.create(directory: scratch.path, realm: 0x5e, name: "home", domain: 141)
        _ = try authority.addUser(name: "alice", id: nil)
        _ = try authority.addDevice(user: 1, name: "router", id: nil)
        let made = try base.openssl(
            ["req", "-new"] + key + [
                "-nodes", "-keyout", scratch.path + "/phone.key", "-subj", "/CN=anything", "-out", scratch.path + "/phone.csr",
            ])
        #expect(made.status == 0, "\(made.output)")
        return (authority, try base.text(scratch.path + "/phone.csr"))
    }

    @Test func aCodeBuysOneDeviceOnceBeforeItExpires() throws {
        let scratch = RealmAuthorityTests.Scratch()
        var (authority, request) = try realm(scratch)
        // Whole seconds: the realm's files keep times to the second.
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let issued = try authority.issueCode(user: 1, deviceName: "phone", lifetime: 120, now: now)
        #expect(issued.code.count == 14 && issued.code.split(separator: "-").count == 3)
        // Only a digest is kept.
        #expect(try !base.text(scratch.path + "/enrollment.json").contains(issued.code.filter { $0 != "-" }))

        let enrolled = try authority.enroll(code: issued.code.lowercased(), request: request, leaseSeconds: 600, now: now)
        #expect(enrolled.identity == .init(realm: 0x5e, user: 1, device: 2, domain: 141))
        #expect(try RealmCrypto.subject(ofCertificate: enrolled.certificate) == "CN=5e 2 1,O=Qeo")
        try enrolled.certificate.write(toFile: scratch.path + "/phone.pem", atomically: true, encoding: .utf8)
        #expect(try base.openssl(["verify", "-CAfile", scratch.path + "/ca.pem", scratch.path + "/phone.pem"]).status == 0)
        // The certificate is for the request's key.
        let certified = try base.openssl(["x509", "-in", scratch.path + "/phone.pem", "-noout", "-pubkey"]).output
        let requested = try base.openssl(["pkey", "-in", scratch.path + "/phone.key", "-pubout"]).output
        #expect(certified == requested)
        // Its permissions hold its grant alone, ending with the lease.
        let permissions = try RealmCrypto.verify(enrolled.permissions, authority: enrolled.authority)
        #expect(permissions.components(separatedBy: "<grant ").count == 2)
        #expect(permissions.contains("<subject_name>CN=5e 2 1,O=Qeo</subject_name>"))
        #expect(permissions.contains("<not_after>\(ISO8601DateFormatter().string(from: now.addingTimeInterval(600)))</not_after>"))

        #expect(throws: EnrollmentRefusal.usedCode(now)) {
            try authority.enroll(code: issued.code, request: request, leaseSeconds: 600, now: now.addingTimeInterval(1))
        }
        #expect(throws: EnrollmentRefusal.unknownCode) { try authority.enroll(code: "2345-6789-ABCD", request: request, leaseSeconds: 600) }
        #expect(throws: EnrollmentRefusal.unknownCode) {
            try authority.enroll(code: "not a code at all", request: request, leaseSeconds: 600)
        }
        let late = try authority.issueCode(user: 1, deviceName: "late", lifetime: 120, now: now)
        #expect(throws: EnrollmentRefusal.expiredCode(now.addingTimeInterval(120))) {
            try authority.enroll(code: late.code, request: request, leaseSeconds: 600, now: now.addingTimeInterval(121))
        }
    }

    @Test func aRequestThatIsNotAP256KeysOwnIsRefusedAndTheCodeKept() throws {
        let scratch = RealmAuthorityTests.Scratch()
        var (authority, request) = try realm(scratch, key: ["-newkey", "rsa:2048"])
        let issued = try authority.issueCode(user: 1, deviceName: "phone", lifetime: 120)
        #expect(throws: EnrollmentRefusal.self) { try authority.enroll(code: issued.code, request: request, leaseSeconds: 600) }
        #expect(throws: EnrollmentRefusal.self) { try authority.enroll(code: issued.code, request: "garbage", leaseSeconds: 600) }
        // A request whose signature does not match its key.
        let tampered = request.replacingOccurrences(of: "A", with: "B")
        #expect(throws: EnrollmentRefusal.self) { try authority.enroll(code: issued.code, request: tampered, leaseSeconds: 600) }
        // The code was not spent by those.
        let (_, good) = try realm(RealmAuthorityTests.Scratch())
        #expect(try authority.enroll(code: issued.code, request: good, leaseSeconds: 600).identity.device == 2)
    }

    @Test func aRevokedDeviceIsListedLosesItsGrantAndCannotRenew() throws {
        let scratch = RealmAuthorityTests.Scratch()
        var (authority, request) = try realm(scratch)
        let issued = try authority.issueCode(user: 1, deviceName: "phone", lifetime: 120)
        let enrolled = try authority.enroll(code: issued.code, request: request, leaseSeconds: 600)
        let serial = try RealmCrypto.facts(ofCertificate: enrolled.certificate).serial
        #expect(try authority.renew(device: 2, serial: serial, leaseSeconds: 600).identity.device == 2)
        #expect(throws: EnrollmentRefusal.revoked) { try authority.renew(device: 2, serial: serial &+ 1, leaseSeconds: 600) }

        _ = try authority.revoke(device: 2)
        #expect(throws: EnrollmentRefusal.revoked) { try authority.renew(device: 2, serial: serial, leaseSeconds: 600) }
        let list = try base.openssl(["crl", "-in", scratch.path + "/crl.pem", "-noout", "-text", "-CAfile", scratch.path + "/ca.pem"])
        #expect(list.status == 0 && list.output.contains("verify OK"), "\(list.output)")
        #expect(list.output.uppercased().contains(String(serial, radix: 16).uppercased()), "\(list.output)")
        // Every device directory has the list; the realm's permissions no longer grant device 2.
        #expect(FileManager.default.fileExists(atPath: scratch.path + "/devices/1/crl.pem"))
        let permissions = try RealmCrypto.verify(
            try base.text(scratch.path + "/permissions.p7s"), authority: try base.text(scratch.path + "/ca.pem"))
        #expect(!permissions.contains("CN=5e 2 1,O=Qeo"))
        #expect(permissions.contains("CN=5e 1 1,O=Qeo"))

        // A revoked user's devices go with it, and its codes are worth nothing.
        let code = try authority.issueCode(user: 1, deviceName: "tablet", lifetime: 120)
        let devices = try authority.revoke(user: 1)
        #expect(devices.map(\.id) == [1])
        #expect(throws: EnrollmentRefusal.revoked) { try authority.enroll(code: code.code, request: request, leaseSeconds: 600) }
        #expect(throws: RealmError.self) { try authority.issueCode(user: 1, deviceName: "x", lifetime: 120) }
    }

    @Test func thePolicyDecidesWhoReadsATopic() throws {
        let policy = try QeoPolicy(
            parsing: "[meta]\nversion=1.0\nseqnr=2\n[rid:5e]\norg.qeo.*=r\n[uid:2]\norg.qeo.secret.Diary=w\n", file: "policy")
        #expect(policy.rights(realm: 0x5e, user: 1, topic: "org.qeo.secret.Diary") == (true, false))
        #expect(policy.rights(realm: 0x5e, user: 2, topic: "org::qeo::secret::Diary") == (false, true))
        #expect(policy.rights(realm: 0x5e, user: 1, topic: "com.other.Topic") == (false, false))
    }
}
