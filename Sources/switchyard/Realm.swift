import ArgumentParser
import Foundation
import QeoRealm

/// `switchyard realm …`: a Qeo realm's certificate authority for the qeo plugin's DDS Security —
/// the realm CA, users, devices and the policy, signed, without running openssl by hand.
struct Realm: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create and manage a secured Qeo realm (CA, users, devices, policy).",
        subcommands: [Init.self, AddUser.self, AddDevice.self, Policy.self]
    )

    struct DirectoryArgument: ParsableArguments {
        @Argument(help: "The realm directory (holds the realm CA's private key: keep it safe).")
        var directory: String

        func open() throws -> RealmAuthority {
            try attempt { () throws(RealmError) in try RealmAuthority(directory: directory) }
        }
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a realm: its CA, an initial policy (members read and write everything), signed documents.")

        @OptionGroup var options: DirectoryArgument

        @Option(help: "The realm id (decimal or 0x-hex; random when left out).")
        var id: String?

        @Option(help: "A name for the realm.")
        var name: String = "realm"

        @Option(help: "The DDS domain the realm's devices join (0…230; Qeo's is 128).")
        var domain: UInt32 = 128

        func run() throws {
            let realm = try id.map { try parseIdentifier($0, "--id") }
            let authority = try attempt { () throws(RealmError) in
                try RealmAuthority.create(directory: options.directory, realm: realm, name: name, domain: domain)
            }
            print("realm rid:\(QeoIdentifier.hex(authority.registry.realm)) on domain \(domain) in \(options.directory)")
        }
    }

    struct AddUser: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add-user", abstract: "Add a user to the realm.")

        @OptionGroup var options: DirectoryArgument

        @Argument(help: "The user's name.")
        var name: String

        @Option(help: "The user id (decimal or 0x-hex; the next free one when left out).")
        var id: String?

        func run() throws {
            var authority = try options.open()
            let id = try id.map { try parseIdentifier($0, "--id") }
            let user = try attempt { () throws(RealmError) in try authority.addUser(name: name, id: id) }
            print("user uid:\(QeoIdentifier.hex(user.id)) (\(user.name))")
        }
    }

    struct AddDevice: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-device",
            abstract: "Add a device of a user: prints its credentials directory, the qeo plugin's `security:` setting.")

        @OptionGroup var options: DirectoryArgument

        @Argument(help: "The device's name.")
        var name: String

        @Option(help: "The owning user's id (decimal or 0x-hex).")
        var user: String

        @Option(help: "The device id (decimal or 0x-hex; the next free one when left out).")
        var id: String?

        func run() throws {
            var authority = try options.open()
            let user = try parseIdentifier(user, "--user")
            let id = try id.map { try parseIdentifier($0, "--id") }
            let device = try attempt { () throws(RealmError) in try authority.addDevice(user: user, name: name, id: id) }
            print(authority.deviceDirectory(device).path)
        }
    }

    struct Policy: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the realm's Qeo policy, or install a new one (its seqnr must be higher) and re-sign the permissions.")

        @OptionGroup var options: DirectoryArgument

        @Argument(help: "A Qeo policy file ([meta] version=1.0 seqnr=N; [rid:HEX]/[uid:HEX] sections; topic=r|w|rw).")
        var file: String?

        func run() throws {
            let authority = try options.open()
            guard let file else {
                print(try attempt { () throws(RealmError) in try authority.policyText() }, terminator: "")
                return
            }
            let text: String
            do {
                text = try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                printError("error: \(file): \(error.localizedDescription)")
                throw ExitCode(1)
            }
            try attempt { () throws(RealmError) in try authority.installPolicy(text, file: file) }
            print("policy installed; permissions re-signed for \(authority.registry.devices.count) devices")
        }
    }
}

/// Runs a realm operation, printing its error and exiting 1 when it fails.
private func attempt<Result>(_ body: () throws(RealmError) -> Result) throws -> Result {
    do {
        return try body()
    } catch {
        printError("error: \(error)")
        throw ExitCode(1)
    }
}

/// A 64-bit id, decimal or 0x-hex, as the qeo plugin's settings take them.
private func parseIdentifier(_ text: String, _ option: String) throws -> UInt64 {
    guard let parsed = QeoIdentifier.parse(text) else {
        throw ValidationError("\(option): '\(text)' is not a 64-bit number (decimal or 0x-hex)")
    }
    return parsed
}
