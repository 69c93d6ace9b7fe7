import Foundation
import QeoRealm
import Synchronization

/// Decides whom a change of a watched state topic wakes and records it in their feeds: every
/// user of the realm, not revoked, whose policy lets its devices read the topic. The realm's
/// registry and policy are read again when either file changes.
public final class WakeWatcher: Sendable {
    /// The feed members fetch from.
    public let feed: WakeFeed
    /// The watched topics (QDM names).
    public let topics: Set<String>
    private let realm: String
    /// The members per topic, and the modification times of the files they were read from.
    private let members = Mutex<(stamps: [Date?], byTopic: [String: [UInt64]])>(([], [:]))

    public init(feed: WakeFeed, topics: [String], realm: String) {
        self.feed = feed
        self.topics = Set(topics)
        self.realm = realm
    }

    /// Records a change of `topic`'s instance `key` (canonical JSON) to `value` (nil: removed);
    /// returns the users woken and the change's cursor, or nil when the topic is not watched,
    /// nobody may read it, or every reader's feed holds that value already.
    public func changed(topic: String, key: String, value: [UInt8]?) throws -> (users: [UInt64], cursor: Int64)? {
        guard topics.contains(topic) else { return nil }
        let users = try readers(of: topic)
        guard !users.isEmpty, let recorded = try feed.record(users: users, topic: topic, key: key, value: value) else { return nil }
        return (recorded.users, recorded.cursor)
    }

    /// The users whose devices may read `topic` now.
    public func readers(of topic: String) throws -> [UInt64] {
        let files = [RealmRegistry.fileName, "policy"].map { URL(fileURLWithPath: realm).appendingPathComponent($0).path }
        let stamps = files.map { (try? FileManager.default.attributesOfItem(atPath: $0)[.modificationDate]) as? Date }
        if let known = members.withLock({ $0.stamps == stamps ? $0.byTopic : nil }) { return known[topic] ?? [] }
        let authority = try RealmAuthority(directory: realm)
        let policy = try QeoPolicy(parsing: try authority.policyText(), file: files[1])
        let registry = authority.registry
        var byTopic: [String: [UInt64]] = [:]
        for topic in topics {
            byTopic[topic] = registry.users.filter { user in
                user.revoked == nil && policy.rights(realm: registry.realm, user: user.id, topic: topic).read
            }.map(\.id)
        }
        members.withLock { $0 = (stamps, byTopic) }
        return byTopic[topic] ?? []
    }
}
