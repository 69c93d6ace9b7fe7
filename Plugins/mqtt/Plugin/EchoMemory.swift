import NIOCore

/// A bounded memory of recent publishes (topic and payload digest), for recognising the
/// broker's echo of a link's own publish. Entries expire after `lifetime`; at most `capacity`
/// are kept, oldest dropped first.
struct EchoMemory {
    static let capacity = 4096
    static let lifetime = TimeAmount.seconds(30)

    private var entries: [(digest: Int, at: NIODeadline)] = []
    private var counts: [Int: Int] = [:]

    mutating func insert(topic: String, payload: [UInt8], at now: NIODeadline) {
        expire(now: now)
        if entries.count >= Self.capacity { drop(first: 1) }
        let digest = Self.digest(topic, payload)
        entries.append((digest, now))
        counts[digest, default: 0] += 1
    }

    /// Whether a matching publish was remembered (and forgets one of them).
    mutating func remove(topic: String, payload: [UInt8], now: NIODeadline) -> Bool {
        expire(now: now)
        let digest = Self.digest(topic, payload)
        guard let count = counts[digest], count > 0 else { return false }
        counts[digest] = count == 1 ? nil : count - 1
        if let index = entries.firstIndex(where: { $0.digest == digest }) { entries.remove(at: index) }
        return true
    }

    private mutating func expire(now: NIODeadline) {
        let expired = entries.prefix(while: { $0.at + Self.lifetime < now }).count
        if expired > 0 { drop(first: expired) }
    }

    private mutating func drop(first count: Int) {
        for entry in entries.prefix(count) {
            let left = (counts[entry.digest] ?? 1) - 1
            counts[entry.digest] = left > 0 ? left : nil
        }
        entries.removeFirst(count)
    }

    static func digest(_ topic: String, _ payload: [UInt8]) -> Int {
        var hasher = Hasher()
        hasher.combine(topic)
        hasher.combine(payload)
        return hasher.finalize()
    }
}
