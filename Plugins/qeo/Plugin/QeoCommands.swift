import ArgumentParser
import QeoRealm
import SwitchyardCore
import SwitchyardPluginCommands
import SwitchyardPluginKit

#if canImport(Glibc)
    import Glibc
#endif

extension QeoPlugin {
    /// The commands the manifest declares: `switchyard qeo realm …`.
    static let commands = [
        PluginCommand(name: "realm", summary: "Create and manage a secured Qeo realm (CA, users, devices, policy)")
    ]

    /// Runs `switchyard qeo realm init|add-user|add-device|policy …`.
    static func runCommand(_ command: String, arguments: [String], io: CommandIO) -> Int32 {
        PluginCommandRunner.run(RealmCommand.self, arguments: arguments, io: io)
    }
}

/// `switchyard qeo realm …`: a Qeo realm's certificate authority for the qeo plugin's DDS
/// Security — the realm CA, users, devices and the policy, signed, without running openssl by hand.
struct RealmCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: PluginCommandRunner.program,
            abstract: "Create and manage a secured Qeo realm (CA, users, devices, policy).",
            subcommands: [Init.self, AddUser.self, AddDevice.self, Policy.self, OneTimeCode.self, Revoke.self]
        )
    }

    struct DirectoryArgument: ParsableArguments {
        @Argument(help: "The realm directory (holds the realm CA's private key: keep it safe).")
        var directory: String

        func open(io: CommandIO) throws -> RealmAuthority {
            try attempt(io) { () throws(RealmError) in try RealmAuthority(directory: directory) }
        }

        /// Runs `change` on the realm under its lock (a router's enrollment endpoint may be
        /// changing it too), printing its error and exiting 1 when it fails.
        func change<Result>(io: CommandIO, _ change: (inout RealmAuthority) throws(RealmError) -> Result) throws -> Result {
            try attempt(io) { () throws(RealmError) in
                // Not a realm: say so, rather than that its lock cannot be made.
                _ = try RealmAuthority(directory: directory)
                return try RealmLock.withLock(directory: directory) { () throws(RealmError) in
                    var authority = try RealmAuthority(directory: directory)
                    return try change(&authority)
                }
            }
        }
    }

    struct Init: PluginSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a realm: its CA, an initial policy (members read and write everything), signed documents.")

        @OptionGroup var options: DirectoryArgument

        @Option(help: "The realm id (decimal or 0x-hex; random when left out).")
        var id: String?

        @Option(help: "A name for the realm.")
        var name: String = "realm"

        @Option(help: "The DDS domain the realm's devices join (0…230; Qeo's is 128).")
        var domain: UInt32 = 128

        func run(io: CommandIO) throws {
            let realm = try id.map { try parseIdentifier($0, "--id") }
            let authority = try attempt(io) { () throws(RealmError) in
                try RealmAuthority.create(directory: options.directory, realm: realm, name: name, domain: domain)
            }
            io.write("realm rid:\(QeoIdentifier.hex(authority.registry.realm)) on domain \(domain) in \(options.directory)\n")
        }
    }

    struct AddUser: PluginSubcommand {
        static let configuration = CommandConfiguration(commandName: "add-user", abstract: "Add a user to the realm.")

        @OptionGroup var options: DirectoryArgument

        @Argument(help: "The user's name.")
        var name: String

        @Option(help: "The user id (decimal or 0x-hex; the next free one when left out).")
        var id: String?

        func run(io: CommandIO) throws {
            let id = try id.map { try parseIdentifier($0, "--id") }
            let user = try options.change(io: io) { authority throws(RealmError) in try authority.addUser(name: name, id: id) }
            io.write("user uid:\(QeoIdentifier.hex(user.id)) (\(user.name))\n")
        }
    }

    struct AddDevice: PluginSubcommand {
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

        func run(io: CommandIO) throws {
            let user = try parseIdentifier(user, "--user")
            let id = try id.map { try parseIdentifier($0, "--id") }
            let directory = try options.change(io: io) { authority throws(RealmError) in
                authority.deviceDirectory(try authority.addDevice(user: user, name: name, id: id))
            }
            io.write(directory.path + "\n")
        }
    }

    struct Policy: PluginSubcommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the realm's Qeo policy, or install a new one (its seqnr must be higher) and re-sign the permissions.")

        @OptionGroup var options: DirectoryArgument

        @Argument(help: "A Qeo policy file ([meta] version=1.0 seqnr=N; [rid:HEX]/[uid:HEX] sections; topic=r|w|rw).")
        var file: String?

        func run(io: CommandIO) throws {
            let authority = try options.open(io: io)
            guard let file else {
                io.write(try attempt(io) { () throws(RealmError) in try authority.policyText() })
                return
            }
            let text = try readPolicy(file, io: io)
            try options.change(io: io) { authority throws(RealmError) in try authority.installPolicy(text, file: file) }
            io.write("policy installed; permissions re-signed for \(authority.registry.devices.count) devices\n")
        }
    }
}

/// The largest policy file read: a policy is a few kilobytes of topic rules.
private let maximumPolicyBytes = 1 << 20

/// Reads a policy file (UTF-8, at most ``maximumPolicyBytes``), printing why and exiting 1 when
/// it cannot.
private func readPolicy(_ file: String, io: CommandIO) throws -> String {
    guard let handle = fopen(file, "rb") else {
        io.writeError("error: \(file): \(String(cString: strerror(errno)))\n")
        throw ExitCode(1)
    }
    defer { fclose(handle) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let count = fread(&chunk, 1, chunk.count, handle)
        if count == 0 { break }
        bytes.append(contentsOf: chunk[..<count])
        if bytes.count > maximumPolicyBytes {
            io.writeError("error: \(file): larger than \(maximumPolicyBytes) bytes; a policy is a few kilobytes\n")
            throw ExitCode(1)
        }
    }
    if ferror(handle) != 0 {
        io.writeError("error: \(file): \(String(cString: strerror(errno)))\n")
        throw ExitCode(1)
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
        io.writeError("error: \(file): not UTF-8 text\n")
        throw ExitCode(1)
    }
    return text
}

/// Runs a realm operation, printing its error and exiting 1 when it fails.
func attempt<Result>(_ io: CommandIO, _ body: () throws(RealmError) -> Result) throws -> Result {
    do {
        return try body()
    } catch {
        io.writeError("error: \(error)\n")
        throw ExitCode(1)
    }
}

/// A 64-bit id, decimal or 0x-hex, as the qeo plugin's settings take them.
func parseIdentifier(_ text: String, _ option: String) throws -> UInt64 {
    guard let parsed = QeoIdentifier.parse(text) else {
        throw ValidationError("\(option): '\(text)' is not a 64-bit number (decimal or 0x-hex)")
    }
    return parsed
}
