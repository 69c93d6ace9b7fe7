import ArgumentParser
import Foundation
import SwitchyardAdminClient
import SwitchyardCore
import SwitchyardPluginCommands
import SwitchyardPluginKit

extension SIPPlugin {
    /// The commands the manifest declares: `switchyard sip history …`.
    static let commands = [
        PluginCommand(name: "history", summary: "Show or clear a sip instance's message history (asks the running router)")
    ]

    /// Runs `switchyard sip history …`.
    static func runCommand(_ command: String, arguments: [String], io: CommandIO) -> Int32 {
        PluginCommandRunner.run(SIPHistoryCommand.self, arguments: arguments, io: io)
    }
}

/// `switchyard sip history IDENTITY [--peer URI] [--since TIME] [--clear]`: the message
/// history a running router keeps for a sip instance (`history:`), read through the admin
/// API's piece run (`history_query`) and cleared through its inject (`sip.Control`).
struct SIPHistoryCommand: PluginSubcommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: PluginCommandRunner.program,
            abstract: "Show or clear a sip instance's message history, newest first.",
            discussion: "One line per MESSAGE: time, direction (in/out), peer, status, content type, body.")
    }

    @Argument(help: "The identity: the sip instance's name in the route file (one instance is one identity).")
    var identity: String

    @Option(help: "Only messages with this peer (a sip: URI).")
    var peer: String?

    @Option(help: "Only messages since then: an RFC 3339 time, or an age such as 90s, 15m, 2h, 7d.")
    var since: String?

    @Option(help: "At most this many messages (1-1000).")
    var limit = 100

    @Option(help: "Only messages older than the entry with this id (the next page).")
    var before: Int?

    @Flag(help: "One JSON object per line instead of columns.")
    var json = false

    @Flag(help: "Remove the messages (with --peer, only that peer's) instead of showing them.")
    var clear = false

    @OptionGroup var admin: AdminOption

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be 1-1000") }
        if let before, before < 1 { throw ValidationError("--before must be an entry id") }
        if clear, since != nil { throw ValidationError("--clear removes by --peer only, not --since") }
    }

    func run(io: CommandIO) throws {
        let client = try admin.client(io: io)
        let instance = Self.pathSegment(identity)
        if clear {
            var body: [String: JSONValue] = ["action": "clear_history"]
            if let peer { body["peer"] = .string(peer) }
            let answer = try ask(client, "POST", "/v1/instances/\(instance)/ports/control", body: .object(body), io: io)
            io.write(answer["outcome"]?.stringValue == "ok" ? "cleared\n" : "\(answer.serialized())\n")
            return
        }
        var input: [String: JSONValue] = ["limit": .int(limit)]
        if let before { input["before"] = .int(before) }
        if let peer { input["peer"] = .string(peer) }
        if let since {
            guard let time = Self.time(since, now: Date()) else {
                io.writeError("error: --since '\(since)' is neither an RFC 3339 time nor an age such as 2h\n")
                throw ExitCode(64)
            }
            input["since"] = .string(time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        }
        let answer = try ask(client, "POST", "/v1/instances/\(instance)/pieces/history_query", body: .object(input), io: io)
        guard let entries = answer["entries"]?.arrayValue else {
            io.writeError("error: \(identity): the answer holds no entries\n")
            throw ExitCode(1)
        }
        for entry in entries {
            if json {
                io.write(entry.serialized() + "\n")
            } else {
                let status = entry["status"]?.intValue ?? 0
                let columns = [
                    entry["time"]?.stringValue ?? "", entry["direction"]?.stringValue ?? "", entry["peer"]?.stringValue ?? "",
                    status == 0 ? (entry["outcome"]?.stringValue ?? "-") : String(status), entry["content_type"]?.stringValue ?? "",
                    entry["body_encoding"] == nil
                        ? (entry["body"]?.stringValue ?? "") : "(binary, \(entry["body_bytes"]?.intValue ?? 0) bytes)",
                ]
                io.write(columns.map(Self.column).joined(separator: "\t") + "\n")
            }
        }
        if answer["more"]?.boolValue == true, let last = entries.last?["id"]?.intValue {
            io.writeError("(more: --before \(last))\n")
        }
    }

    private func ask(_ client: AdminClient, _ method: String, _ path: String, body: JSONValue, io: CommandIO) throws -> JSONValue {
        let answer: AdminClient.Answer
        do {
            answer = try client.request(method, path, json: body.serializedBytes())
        } catch {
            io.writeError("error: \(error)\n")
            throw ExitCode(1)
        }
        let value = try? JSONValue(parsing: answer.body)
        guard (200..<300).contains(answer.status), let value else {
            let reason =
                value?["error"]?.stringValue ?? value?["reason"]?.stringValue ?? String(decoding: answer.body.prefix(200), as: UTF8.self)
            io.writeError("error: \(Self.column(identity)): \(Self.column(reason)) (\(answer.status))\n")
            throw ExitCode(1)
        }
        return value
    }

    /// An RFC 3339 time, or now minus an age (`90s`, `15m`, `2h`, `7d`).
    static func time(_ text: String, now: Date) -> Date? {
        if let time = SIPHistoryEntry.time(text) { return time }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let unit = text.last.flatMap({ units[$0] }), let count = Double(text.dropLast()), count >= 0, count < 1e7 else { return nil }
        return now.addingTimeInterval(-count * unit)
    }

    /// A name as one URL path segment.
    static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }

    /// A value a peer chose as one column, at most 200 characters of it.
    static func column(_ text: String) -> String { CommandIO.column(text.prefix(200)) }
}
