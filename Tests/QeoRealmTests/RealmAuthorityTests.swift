import Foundation
import QeoRealm
import Testing

@Suite("Realm authority: CA, devices, signed documents")
struct RealmAuthorityTests {
    /// A fresh directory, removed after the test.
    final class Scratch {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("realm-\(UUID().uuidString)").path
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    func text(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    /// `openssl` on the arguments: its exit status and output.
    func openssl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    @Test func aDeviceGetsACertificateAndSignedDocumentsOpenSSLAccepts() throws {
        let scratch = Scratch()
        var authority = try RealmAuthority.create(directory: scratch.path, realm: 0x1a2b, name: "home", domain: 140)
        let user = try authority.addUser(name: "alice", id: nil)
        #expect(user.id == 1)
        let device = try authority.addDevice(user: 1, name: "kitchen", id: 0x7)
        let folder = authority.deviceDirectory(device).path

        let credentials = try DeviceCredentials(directory: folder)
        #expect(credentials.identity == .init(realm: 0x1a2b, user: 1, device: 7, domain: 140))
        let subject = try RealmCrypto.subject(ofCertificate: try text(folder + "/device.pem"))
        #expect(subject == "CN=1a2b 7 1,O=Qeo")
        let verified = try openssl(["verify", "-CAfile", folder + "/ca.pem", folder + "/device.pem"])
        #expect(verified.status == 0, "\(verified.output)")
        let keyMode = try FileManager.default.attributesOfItem(atPath: folder + "/device.key")[.posixPermissions] as? Int
        #expect(keyMode == 0o600)
        // Every file and folder of the realm is its owner's only.
        for file in [scratch.path, folder, scratch.path + "/ca.key", scratch.path + "/realm.json", folder + "/device.pem"] {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode.map { $0 & 0o077 } == 0, "\(file) is readable by others: \(String(mode ?? 0, radix: 8))")
        }

        // The permissions name the device's subject; openssl checks the signature as Cyclone does.
        for document in ["permissions", "governance"] {
            let checked = try openssl([
                "smime", "-verify", "-text", "-in", folder + "/\(document).p7s", "-CAfile", folder + "/ca.pem",
            ])
            #expect(checked.status == 0, "\(checked.output)")
            #expect(checked.output.contains("<id>140</id>"))
        }
        let permissions = try RealmCrypto.verify(try text(folder + "/permissions.p7s"), authority: try text(folder + "/ca.pem"))
        #expect(permissions.contains("<subject_name>CN=1a2b 7 1,O=Qeo</subject_name>"))
        #expect(permissions.contains("<allow_rule>\n        <domains><id>140</id></domains>\n        <publish><topics><topic>*</topic>"))
    }

    @Test func anotherRealmsAuthorityDoesNotVouchForTheDocuments() throws {
        let (first, second) = (Scratch(), Scratch())
        var authority = try RealmAuthority.create(directory: first.path, realm: 1, name: "one", domain: 128)
        try RealmAuthority.create(directory: second.path, realm: 2, name: "two", domain: 128)
        _ = try authority.addUser(name: "bob", id: 5)
        let device = try authority.addDevice(user: 5, name: "phone", id: nil)
        let signed = try text(authority.deviceDirectory(device).path + "/permissions.p7s")
        #expect(throws: RealmError.self) { try RealmCrypto.verify(signed, authority: try text(second.path + "/ca.pem")) }
        let otherDevice = try openssl([
            "verify", "-CAfile", second.path + "/ca.pem", authority.deviceDirectory(device).path + "/device.pem",
        ])
        #expect(otherDevice.status != 0)
    }

    @Test func aPolicyBecomesPermissionsAndIsCheckedAgainstTheRealm() throws {
        let scratch = Scratch()
        var authority = try RealmAuthority.create(directory: scratch.path, realm: 0xab, name: "home", domain: 128)
        _ = try authority.addUser(name: "reader", id: 0x10)
        let device = try authority.addDevice(user: 0x10, name: "display", id: nil)
        let policy = """
            [meta]
            version=1.0
            seqnr=2
            [uid:10]
            org::qeo::sample::simplechat::*=r
            org::qeo::sample::simplechat::ChatState=rw

            """
        try authority.installPolicy(policy, file: "new-policy")
        #expect(try authority.policyText() == policy)
        let permissions = try RealmCrypto.verify(
            try text(authority.deviceDirectory(device).path + "/permissions.p7s"), authority: try text(scratch.path + "/ca.pem"))
        let rules = permissions.components(separatedBy: "\n").filter {
            $0.contains("<topic>") || $0.contains("_rule>") && !$0.contains("</")
        }
        #expect(
            rules.map { $0.trimmingCharacters(in: .whitespaces) } == [
                "<allow_rule>", "<publish><topics><topic>org/qeo/sample/simplechat/ChatState</topic></topics></publish>",
                "<allow_rule>", "<subscribe><topics><topic>org/qeo/sample/simplechat/ChatState</topic></topics></subscribe>",
                "<allow_rule>", "<subscribe><topics><topic>org/qeo/sample/simplechat/*</topic></topics></subscribe>",
                "<deny_rule>", "<publish><topics><topic>org/qeo/sample/simplechat/*</topic></topics></publish>",
            ])

        #expect(throws: RealmError("again: seqnr=2 is not above the installed policy's 2")) {
            try authority.installPolicy(policy, file: "again")
        }
        #expect(throws: RealmError("stranger:4: [uid:99] is not a user of this realm")) {
            try authority.installPolicy("[meta]\nversion=1.0\nseqnr=9\n[uid:99]\n*=r\n", file: "stranger")
        }
        #expect(throws: RealmError("elsewhere:4: [rid:1] is not this realm (rid:ab)")) {
            try authority.installPolicy("[meta]\nversion=1.0\nseqnr=9\n[rid:1]\n*=r\n", file: "elsewhere")
        }
    }

    @Test func mistakesAreRefusedWithTheReason() throws {
        let scratch = Scratch()
        var authority = try RealmAuthority.create(directory: scratch.path, realm: 3, name: "x", domain: 128)
        #expect(throws: RealmError("\(scratch.path) already holds a realm (\(scratch.path)/realm.json)")) {
            try RealmAuthority.create(directory: scratch.path, realm: 3, name: "x", domain: 128)
        }
        #expect(throws: RealmError("user 4 is not in realm 3 (users: none)")) {
            try authority.addDevice(user: 4, name: "d", id: nil)
        }
        _ = try authority.addUser(name: "u", id: 4)
        #expect(throws: RealmError("user 4 already exists (u)")) { try authority.addUser(name: "v", id: 4) }
        #expect(throws: RealmError.self) { try DeviceCredentials(directory: scratch.path) }
    }
}
