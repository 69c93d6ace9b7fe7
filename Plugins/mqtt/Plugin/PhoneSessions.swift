import DequeModule

/// Session objects by phone, least recently used dropped first once `capacity` phones are
/// known or their session objects and ids take more than `byteCapacity` bytes. Touching a
/// phone (remembering or reading its session) makes it the most recent. Separate from
/// ``MQTTConnectProfile``, which keeps one behind its lock and decides what to remember.
struct PhoneSessions {
    let capacity: Int
    let byteCapacity: Int
    /// Bytes of the session objects and phone ids kept (each entry counts its session once
    /// and its phone id twice: the entry's key and the reverse map's value).
    private(set) var bytes = 0
    private var entries: [String: (session: [UInt8], stamp: UInt64)] = [:]
    /// Which phone sent which session object last (for envelopes that carry only the session).
    private var phones: [[UInt8]: String] = [:]
    /// Phones in order of use; an element is current only while its stamp matches the entry.
    private var order: Deque<(phone: String, stamp: UInt64)> = []
    private var clock: UInt64 = 0

    init(capacity: Int, byteCapacity: Int = MQTTConnectProfile.defaultByteCapacity) {
        self.capacity = max(1, capacity)
        self.byteCapacity = max(1, byteCapacity)
    }

    var count: Int { entries.count }

    static func size(_ session: [UInt8], _ phone: String) -> Int { session.count + 2 * phone.utf8.count }

    /// Remembers `session` for `phone`; returns how many session objects the limits made it
    /// forget (one too large to keep at all is forgotten at once, along with the phone's older one).
    @discardableResult
    mutating func remember(_ session: [UInt8], for phone: String) -> Int {
        var forgotten = 0
        if let previous = entries.removeValue(forKey: phone) {
            if phones[previous.session] == phone { phones[previous.session] = nil }
            bytes -= Self.size(previous.session, phone)
        }
        guard Self.size(session, phone) <= byteCapacity else { return 1 }
        entries[phone] = (session, touch(phone))
        phones[session] = phone
        bytes += Self.size(session, phone)
        while entries.count > capacity || bytes > byteCapacity, let oldest = order.popFirst() {
            guard let entry = entries[oldest.phone], entry.stamp == oldest.stamp else { continue }
            entries[oldest.phone] = nil
            if phones[entry.session] == oldest.phone { phones[entry.session] = nil }
            bytes -= Self.size(entry.session, oldest.phone)
            forgotten += 1
        }
        return forgotten
    }

    mutating func session(for phone: String) -> [UInt8]? {
        guard var entry = entries[phone] else { return nil }
        entry.stamp = touch(phone)
        entries[phone] = entry
        return entry.session
    }

    func phone(withSession session: [UInt8]) -> String? { phones[session] }

    private mutating func touch(_ phone: String) -> UInt64 {
        clock += 1
        order.append((phone, clock))
        // Stale order entries pile up while the same phones are used again and again: drop
        // them once they outnumber the live ones.
        if order.count > 2 * capacity + 64 {
            order = Deque(order.filter { entries[$0.phone]?.stamp == $0.stamp || $0.phone == phone && $0.stamp == clock })
        }
        return clock
    }
}
