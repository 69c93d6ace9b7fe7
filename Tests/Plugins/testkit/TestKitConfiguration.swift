import SwitchyardCore
import SwitchyardPluginKit

/// A testkit instance's configuration; the manifest's schema is derived from it. Each section
/// enables its piece.
struct TestKitConfiguration: PluginConfiguration {
    /// `numbers:`, the durable numbered source.
    struct Numbers: Decodable, Sendable {
        var count: Int
        var prefix: String
        var subjects: Int
        /// The file the settled watermark is kept in.
        var state: String

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            count = try container.decode(.count, in: 1...Int.max)
            prefix = try container.decode(.prefix, default: "n")
            subjects = try container.decode(.subjects, default: 1, atLeast: 1)
            state = try container.decode(String.self, forKey: .state)
        }

        private enum CodingKeys: CodingKey { case count, prefix, subjects, state }
    }

    /// `collect:`, the scriptable sink.
    struct Collect: Decodable, Sendable {
        var path: String
        var failFirst: Int
        var reject: Bool
        var failWhile: String?
        var delayMs: Int
        var maxInFlight: Int

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            path = try container.decode(String.self, forKey: .path)
            failFirst = try container.decode(.failFirst, default: 0, atLeast: 0)
            reject = try container.decode(.reject, default: false)
            failWhile = try container.decodeIfPresent(String.self, forKey: .failWhile)
            delayMs = try container.decode(.delayMs, default: 0, atLeast: 0)
            maxInFlight = try container.decodeIfPresent(.maxInFlight, in: 1...Int.max) ?? .max
        }

        private enum CodingKeys: CodingKey { case path, failFirst, reject, failWhile, delayMs, maxInFlight }
    }

    /// A section that names a file: `late_calls:`, `state_check:` and `hold_check:`.
    struct FileSection: Decodable, Sendable {
        var path: String
    }

    var numbers: Numbers?
    var lateCalls: FileSection?
    var stateCheck: FileSection?
    var holdCheck: FileSection?
    var collect: Collect?
    /// `describe_blocks_on: { path: FIFO }`: describing the instance opens the FIFO for reading,
    /// which blocks until someone opens it for writing — a load that hangs, on cue.
    var describeBlocksOn: FileSection?
}
