import SwitchyardPluginKit

/// A qeo instance's `wake:` section: state topics whose changes wake their readers' apps.
public struct WakeSettings: Decodable, Sendable {
    /// QDM names of state topics the instance reads.
    public var topics: [String]
    /// The feed's SQLite file; by default `wake.sqlite` in the realm directory.
    public var store: String?
    /// Changes kept per member (latest per state key); older ones are dropped.
    public var maximumChanges: Int
    /// How long a change is kept for a member that does not fetch it.
    public var maximumAge: Duration

    /// The most changes one fetch returns.
    public static let pageSize = 200

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        topics = try container.decode([String].self, forKey: .topics)
        store = try container.decodeIfPresent(ConfigurationPath.self, forKey: .store)?.path
        maximumChanges = try container.decode(.maxChanges, default: 1000, atLeast: 1)
        maximumAge = try container.decode(.maxAge, default: .seconds(7 * 86400), atLeast: .seconds(1))
        if !decoder.isDerivingConfigurationSchema, topics.isEmpty {
            throw ConfigurationError(codingPath: decoder.codingPath + [CodingKeys.topics], "name at least one state topic")
        }
    }

    private enum CodingKeys: CodingKey { case topics, store, maxChanges, maxAge }
}
