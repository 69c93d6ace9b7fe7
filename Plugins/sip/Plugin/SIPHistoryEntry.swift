import Foundation
import SwitchyardCore

/// One MESSAGE in an identity's history, as iDoubs' history service keeps it: when, which way,
/// with whom, what (its content type and at most `history.max_body` bytes of its body), its
/// Call-ID and how it ended. Stored as its JSON in the router's store.
struct SIPHistoryEntry: Sendable, Equatable {
    /// Which way the MESSAGE went.
    enum Direction: String, Sendable { case incoming = "in", outgoing = "out" }

    /// Increasing with every entry of the instance (the store key's order).
    var id: UInt64
    var time: Date
    var direction: Direction
    /// The far end: the sender of an incoming MESSAGE, the destination of an outgoing one.
    var peer: String
    var contentType: String
    /// The body's first `history.max_body` bytes: UTF-8 text as is, anything else base64.
    var body: [UInt8]
    /// The whole body's length (more than `body` when it was cut).
    var bodyBytes: Int
    var callID: String
    /// The final status: what this instance answered an incoming MESSAGE, what the far end
    /// answered an outgoing one; 0 while no answer has come (or none ever did: Timer F).
    var status: Int
    var reason: String
    /// An outgoing MESSAGE's delivery outcome: `pending`, then `ok`, `retry` or `reject`.
    var outcome: String?
    /// How many MESSAGEs were sent for the envelope (the route's retries included).
    var attempts: Int
    /// The envelope an outgoing MESSAGE was sent for.
    var envelopeID: String?

    /// The store key of entry `id`: zero-padded so keys sort as ids do.
    static func key(_ id: UInt64) -> String {
        let digits = String(id)
        return keyPrefix + String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    /// Every history key starts with this.
    static let keyPrefix = "history/"

    /// The id a store key names, nil for a key that is not ``key(_:)``'s.
    static func id(ofKey key: String) -> UInt64? {
        guard key.hasPrefix(keyPrefix) else { return nil }
        let digits = key.dropFirst(keyPrefix.count)
        guard digits.count == 20, digits.allSatisfy(\.isASCII) else { return nil }
        return UInt64(digits)
    }

    private static let timeStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// An RFC 3339 time, with or without fractional seconds.
    static func time(_ text: String) -> Date? {
        (try? timeStyle.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
    }

    /// The entry as stored, as the `history_query` piece answers and as history events carry it.
    var json: JSONValue {
        var object: [String: JSONValue] = [
            "id": .int(Int(clamping: id)), "time": .string(time.formatted(Self.timeStyle)), "direction": .string(direction.rawValue),
            "peer": .string(peer), "content_type": .string(contentType), "body_bytes": .int(bodyBytes), "call_id": .string(callID),
            "status": .int(status), "reason": .string(reason), "attempts": .int(attempts),
        ]
        if let text = String(validating: body, as: UTF8.self) {
            object["body"] = .string(text)
        } else {
            object["body"] = .string(Data(body).base64EncodedString())
            object["body_encoding"] = "base64"
        }
        if body.count < bodyBytes { object["truncated"] = true }
        if let outcome { object["outcome"] = .string(outcome) }
        if let envelopeID { object["envelope_id"] = .string(envelopeID) }
        return .object(object)
    }

    init(
        id: UInt64, time: Date, direction: Direction, peer: String, contentType: String, body: [UInt8], maximumBody: Int, callID: String,
        status: Int, reason: String, outcome: String? = nil, attempts: Int = 0, envelopeID: String? = nil
    ) {
        self.id = id
        self.time = time
        self.direction = direction
        self.peer = peer
        self.contentType = contentType
        self.body = Self.cut(body, to: maximumBody)
        bodyBytes = body.count
        self.callID = callID
        self.status = status
        self.reason = reason
        self.outcome = outcome
        self.attempts = attempts
        self.envelopeID = envelopeID
    }

    /// Reads a stored entry; nil for anything that is not one (never trusted to be).
    init?(stored bytes: [UInt8]) {
        guard let value = try? JSONValue(parsing: bytes), let id = value["id"]?.intValue, id > 0,
            let timeText = value["time"]?.stringValue, let time = Self.time(timeText),
            let direction = value["direction"]?.stringValue.flatMap(Direction.init), let peer = value["peer"]?.stringValue,
            let text = value["body"]?.stringValue
        else { return nil }
        let body = value["body_encoding"]?.stringValue == "base64" ? Data(base64Encoded: text).map { [UInt8]($0) } : Array(text.utf8)
        guard let body else { return nil }
        self.id = UInt64(id)
        self.time = time
        self.direction = direction
        self.peer = peer
        contentType = value["content_type"]?.stringValue ?? ""
        self.body = body
        bodyBytes = max(body.count, value["body_bytes"]?.intValue ?? body.count)
        callID = value["call_id"]?.stringValue ?? ""
        status = value["status"]?.intValue ?? 0
        reason = value["reason"]?.stringValue ?? ""
        outcome = value["outcome"]?.stringValue
        attempts = value["attempts"]?.intValue ?? 0
        envelopeID = value["envelope_id"]?.stringValue
    }

    /// At most `limit` bytes of `body`, never ending inside a UTF-8 sequence of a text body.
    static func cut(_ body: [UInt8], to limit: Int) -> [UInt8] {
        guard body.count > limit else { return body }
        var cut = Array(body.prefix(limit))
        // A text body cut inside a character stays text: drop the partial sequence (at most 3 bytes).
        for _ in 0..<3 where String(validating: cut, as: UTF8.self) == nil && !cut.isEmpty {
            cut.removeLast()
        }
        return String(validating: cut, as: UTF8.self) == nil ? Array(body.prefix(limit)) : cut
    }
}
