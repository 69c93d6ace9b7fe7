import SwitchyardCore
import SwitchyardPluginKit

/// One core instance's settings: each piece's section enables it (`timer:`, `console:`, `file:`,
/// `relay:`, `subprocess:`). The manifest's schema is derived from this type.
struct CoreConfiguration: PluginConfiguration {
    /// `timer:` emits one envelope per interval.
    struct Timer: Decodable, Sendable {
        var interval: ConfigurationDuration
        /// Ticks before stopping; 0 never stops.
        var count: Int

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            interval = try container.decode(ConfigurationDuration.self, forKey: .interval)
            guard interval.nanoseconds > 0 else {
                throw ConfigurationError(
                    codingPath: decoder.codingPath + [CodingKeys.interval], "must be a positive duration such as 250ms or 1s")
            }
            count = try container.decode(.count, default: 0, atLeast: 0)
        }

        private enum CodingKeys: CodingKey { case interval, count }
    }

    /// What `print` and `write` put on a line: the body, or the whole envelope.
    enum Format: String, ConfigurationEnum { case body, envelope }

    /// `console:` reads standard input and prints to standard output.
    struct Console: Decodable, Sendable {
        var format: Format

        init(from decoder: any Decoder) throws {
            format = try decoder.container(keyedBy: CodingKeys.self).decode(.format, default: Format.body)
        }

        private enum CodingKeys: CodingKey { case format }
    }

    /// `file:` appends JSON lines.
    struct File: Decodable, Sendable {
        var path: String
        var format: Format
        var fsync: Bool

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            path = try container.decode(ConfigurationPath.self, forKey: .path).path
            format = try container.decode(.format, default: Format.envelope)
            fsync = try container.decode(.fsync, default: false)
        }

        private enum CodingKeys: CodingKey { case path, format, fsync }
    }

    /// `relay: {}` passes `in` on to `out`; it has no settings.
    struct Relay: Decodable, Sendable {
        init(from decoder: any Decoder) throws { _ = try decoder.container(keyedBy: CodingKeys.self) }

        private enum CodingKeys: CodingKey {}
    }

    /// `subprocess:` runs a program and emits its output lines.
    struct Program: Decodable, Sendable {
        var command: [String]
        /// The program's working directory: the route file's folder unless set.
        var directory: String
        var codec: Subprocess.Codec
        /// The wait before a restart, at least 100 ms so a program that cannot start is not
        /// retried in a busy loop.
        var restartDelay: Double

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            command = try container.decodeNonEmpty(.command)
            directory = try container.decode(.directory, default: ConfigurationPath(".")).path
            codec = try container.decode(.codec, default: Subprocess.Codec.lines)
            restartDelay = max(try container.decode(.restart, default: .seconds(1)) / .seconds(1), 0.1)
        }

        private enum CodingKeys: CodingKey { case command, directory, codec, restart }
    }

    var timer: Timer?
    var console: Console?
    var file: File?
    var relay: Relay?
    var subprocess: Program?

    static let descriptions = [
        "/timer/interval": "250ms, 1s, 2m… or milliseconds",
        "/timer/count": "Stop after this many ticks (0: never)",
        "/console/format": "What 'print' writes per line",
        "/file/fsync": "fsync after every line before acking",
        "/subprocess/command": "The program and its arguments (looked up on PATH)",
        "/subprocess/codec": "lines: core.Line text; json: each line one JSON value",
        "/subprocess/restart": "Wait before restarting after it exits (default 1s, at least 100ms)",
    ]
}

extension Subprocess.Codec: ConfigurationEnum {
    static let allCases: [Self] = [.lines, .json]
}
