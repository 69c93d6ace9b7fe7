import ArgumentParser
import Foundation
import QeoRealm
import SwitchyardPluginCommands
import SwitchyardPluginKit

extension RealmCommand {
    /// `realm otc DIR USER`: a one-time enrollment code for a new device of a user.
    struct OneTimeCode: PluginSubcommand {
        static let configuration = CommandConfiguration(
            commandName: "otc",
            abstract: "Issue a one-time code with which a new device of a user enrolls at the realm's enrollment endpoint.")

        @OptionGroup var options: DirectoryArgument

        @Argument(help: "The user the new device will belong to (decimal or 0x-hex).")
        var user: String

        @Option(help: "The new device's name.")
        var name: String = "device"

        @Option(help: "How long the code is valid (90s, 2m, 1h; at most 24h).")
        var expires: String = "2m"

        @Option(help: "The enrollment endpoint's address (https://HOST:PORT), put in the QR code with the code and the CA fingerprint.")
        var url: String?

        @Flag(help: "Print the code as text only, without the QR code.")
        var noQR = false

        func run(io: CommandIO) throws {
            let user = try parseIdentifier(user, "USER")
            guard let lifetime = Self.seconds(expires), (1...86400).contains(lifetime) else {
                throw ValidationError("--expires: '\(expires)' is not a duration of at most 24h (90s, 2m, 1h)")
            }
            if let url, !(url.hasPrefix("https://") && url.count < 256 && url.allSatisfy({ $0.isASCII && !$0.isWhitespace })) {
                throw ValidationError("--url: '\(url)' is not an https:// address")
            }
            let issued = try options.change(io: io) { authority throws(RealmError) in
                let issued = try authority.issueCode(user: user, deviceName: name, lifetime: Double(lifetime))
                let fingerprint = try RealmCrypto.facts(ofCertificate: try authority.certificateAuthority()).fingerprint
                let owner = authority.registry.users.first { $0.id == user }?.name ?? ""
                return (issued.code, issued.expires, fingerprint, owner)
            }
            let (code, expiry, fingerprint, owner) = issued
            var text = """
                code: \(code)
                user: \(QeoIdentifier.hex(user)) (\(owner))
                device: \(name)
                expires: \(expiry.formatted(.iso8601)) (in \(expires); it works once)
                ca-sha256: \(fingerprint)

                """
            let compact = code.filter { $0 != "-" }
            let payload =
                url.map { "\($0.hasSuffix("/") ? String($0.dropLast()) : $0)/enroll?code=\(compact)&ca-sha256=\(fingerprint)" } ?? compact
            if url != nil { text += "enroll: \(payload)\n" }
            if !noQR, let picture = TerminalQRCode.render(payload) { text += "\n" + picture }
            io.write(text)
        }

        /// `90s`, `2m`, `1h` or plain seconds.
        static func seconds(_ text: String) -> Int? {
            let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
            if let unit = text.last, let scale = units[unit], let number = Int(text.dropLast()) {
                let (seconds, overflow) = number.multipliedReportingOverflow(by: scale)
                return overflow ? nil : seconds
            }
            return Int(text)
        }
    }

    /// `realm revoke DIR DEVICE` or `realm revoke DIR --user USER`.
    struct Revoke: PluginSubcommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Revoke a device (or every device of a user): the revocation list names it, its grant leaves the permissions, renewals are refused."
        )

        @OptionGroup var options: DirectoryArgument

        @Argument(help: "The device id (decimal or 0x-hex).")
        var device: String?

        @Option(help: "Revoke this user and all its devices instead.")
        var user: String?

        func run(io: CommandIO) throws {
            let target: (device: UInt64?, user: UInt64?) = (
                try device.map { try parseIdentifier($0, "DEVICE") }, try user.map { try parseIdentifier($0, "--user") }
            )
            guard (target.device == nil) != (target.user == nil) else { throw ValidationError("give a DEVICE or --user USER") }
            let (revoked, longest) = try options.change(io: io) { authority throws(RealmError) in
                let devices: [RealmRegistry.Device]
                if let device = target.device {
                    devices = [try authority.revoke(device: device)]
                } else {
                    devices = try authority.revoke(user: target.user ?? 0)
                }
                return (devices, devices.compactMap(\.leaseUntil).max())
            }
            for device in revoked {
                io.write("revoked device \(QeoIdentifier.hex(device.id)) (\(device.name)) of user \(QeoIdentifier.hex(device.user))\n")
            }
            if let user = target.user, revoked.isEmpty { io.write("revoked user \(QeoIdentifier.hex(user)) (it had no devices)\n") }
            let window =
                longest.map {
                    "The longest a revoked device keeps working with a peer that has not reloaded the list: until its permissions lease ends, \($0.formatted(Date.ISO8601FormatStyle()))."
                }
                ?? "Devices added with add-device hold 10-year permissions: only peers that load the new list refuse them; restart the routers' qeo instances."
            io.write(
                "\(RealmAuthority.revocationListFile) re-signed and copied to every device directory: a participant that loads it "
                    + "(at its start) refuses the revoked certificates.\n\(window)\n")
        }
    }
}
