import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// The MQTT Connect profile of an instance (`mqtt_connect: true`): types what the iOS app
/// sends, remembers each phone's session object, and attaches it to what goes to the phone,
/// as the app does in the other direction.
///
/// Inbound, a payload that is a JSON object is typed by its top-level keys, first match wins:
/// `ReplyObject` or `InputFields` → `mqttconnect.DialogReply`; `QRContent` →
/// `mqttconnect.QRCode`; `NFCContent` → `mqttconnect.NFC`; `Picture` →
/// `mqttconnect.CameraPicture`; `Settings` (the receipt the app sends after its settings were
/// changed, every setting in it) → `mqttconnect.SettingsReceipt`; any sensor key (`Proximity`, `Battery`, `Acceleration`,
/// `Altitude`, `GPS`, `Gravity`, `Magneticfield`, `Orientation`, `Rotation`, `Beacons`) →
/// `mqttconnect.SensorValues`; anything else stays `mqtt.Message`. A string `iPhoneID` becomes
/// the header `mqttconnect.iphone_id`, an object `SessionObject` the envelope's session; with
/// both, the session object is remembered for that phone.
///
/// Outbound, a JSON object going to a phone gets a `SessionObject` unless it has one: the one
/// remembered for the phone (named by the header `mqttconnect.iphone_id`, else the body's
/// `iPhoneID`, else found by the envelope's session), else the envelope's own session. One it
/// has replaces the phone's (the app stores it), so it is remembered for that phone.
///
/// Thread safety: inbound runs on the link's event loop, outbound on the router's delivery
/// threads; the memory of session objects is behind a lock.
final class MQTTConnectProfile: Sendable {
    /// The header naming the phone an envelope came from (or is for).
    static let phoneHeader = "mqttconnect.iphone_id"
    /// How many phones' session objects are kept; the least recently used goes first.
    static let defaultCapacity = 10_000
    /// How many bytes of session objects and phone ids are kept (`mqtt_connect_memory`): a
    /// phone that sends huge session objects cannot make the memory grow with the count.
    static let defaultByteCapacity = 16 << 20

    private let sessions: Mutex<PhoneSessions>
    /// Session objects dropped or not kept because of the limits, not yet reported.
    private let forgotten = Atomic<Int>(0)

    init(capacity: Int = MQTTConnectProfile.defaultCapacity, byteCapacity: Int = MQTTConnectProfile.defaultByteCapacity) {
        sessions = Mutex(PhoneSessions(capacity: capacity, byteCapacity: byteCapacity))
    }

    /// How many session objects the limits made the profile forget since the last call
    /// (reported as `mqttconnect_sessions_forgotten_total`).
    func takeForgotten() -> Int {
        forgotten.load(ordering: .relaxed) == 0 ? 0 : forgotten.exchange(0, ordering: .relaxed)
    }

    // MARK: Inbound

    /// Types an inbound `mqtt.Message` envelope from a phone, and takes its session object.
    func inbound(_ envelope: inout Envelope) {
        guard let object = Self.jsonObject(envelope.body) else { return }
        if let type = Self.inboundType(of: object) {
            envelope.type = type
            if envelope.contentType == "application/octet-stream" { envelope.contentType = "application/json" }
        }
        let phone = object["iPhoneID"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        if let phone { envelope.headers[Self.phoneHeader] = phone }
        if case .object? = object["SessionObject"], let session = object["SessionObject"]?.serializedBytes() {
            envelope.session = session
            if let phone {
                let dropped = sessions.withLock { $0.remember(session, for: phone) }
                if dropped > 0 { forgotten.add(dropped, ordering: .relaxed) }
            }
        }
    }

    /// The inbound type of a phone's payload; nil for anything else.
    static func inboundType(of object: [String: JSONValue]) -> String? {
        if object["ReplyObject"] != nil || object["InputFields"] != nil { return dialogReplyType }
        if object["QRContent"] != nil { return qrCodeType }
        if object["NFCContent"] != nil { return nfcType }
        if object["Picture"] != nil { return cameraPictureType }
        if case .object? = object["Settings"] { return settingsReceiptType }
        if object.keys.contains(where: { sensorKeys.contains($0) }) { return sensorValuesType }
        return nil
    }

    // MARK: Outbound

    /// The envelope with the phone's session object attached to its JSON-object payload (the
    /// `payload` of an `mqtt.Publish` body), unless the payload has one or no phone or
    /// session is known. Anything else is returned unchanged.
    func outbound(_ envelope: Envelope) -> Envelope {
        guard var body = Self.jsonObject(envelope.body) else { return envelope }
        let wrapped = envelope.type == MQTTEnvelopes.publishType
        var payload: [String: JSONValue]
        if wrapped {
            guard case .object(let inner)? = body["payload"] else { return envelope }
            payload = inner
        } else {
            payload = body
        }
        let named = envelope.headers[Self.phoneHeader] ?? payload["iPhoneID"]?.stringValue
        if let own = payload["SessionObject"] {
            // The app replaces its session object with this one: what comes next must carry it.
            if case .object = own, let named, !named.isEmpty {
                let dropped = sessions.withLock { $0.remember(own.serializedBytes(), for: named) }
                if dropped > 0 { forgotten.add(dropped, ordering: .relaxed) }
            }
            return envelope
        }
        let remembered: [UInt8]? = sessions.withLock { memory in
            if let named { return memory.session(for: named) }
            guard !envelope.session.isEmpty, let phone = memory.phone(withSession: envelope.session) else { return nil }
            return memory.session(for: phone)
        }
        guard let bytes = remembered ?? (envelope.session.isEmpty ? nil : envelope.session),
            case .object(let session)? = try? JSONValue(parsing: bytes)
        else { return envelope }
        payload["SessionObject"] = .object(session)
        if wrapped { body["payload"] = .object(payload) } else { body = payload }
        var result = envelope
        result.body = JSONValue.object(body).serializedBytes()
        return result
    }

    /// The session object remembered for `phone` (serialized JSON).
    func session(for phone: String) -> [UInt8]? { sessions.withLock { $0.session(for: phone) } }

    // MARK: Checking what goes to the phone

    /// The outbound types' schemas, compiled once.
    static let outboundSchemas: [String: Schema] = {
        var compiled: [String: Schema] = [:]
        for name in outboundTypes {
            guard let json = typeSchemas[name] else { preconditionFailure("no schema for \(name)") }
            do {
                compiled[name] = try Schema(json: json)
            } catch {
                preconditionFailure("the schema of \(name) does not compile: \(error)")
            }
        }
        return compiled
    }()

    /// Why an envelope of an outbound MQTT Connect type cannot go to the phone (its first
    /// violations), or nil when it is fine or of another type.
    static func problem(with envelope: Envelope) -> String? {
        guard let schema = outboundSchemas[envelope.type] else { return nil }
        let body = (try? JSONValue(parsing: envelope.body)) ?? envelope.decodedBody()
        let violations = schema.violations(of: body)
        guard !violations.isEmpty else { return nil }
        let shown = violations.prefix(3).map(\.description).joined(separator: "; ")
        let more = violations.count > 3 ? " (and \(violations.count - 3) more)" : ""
        return "not a valid \(envelope.type): \(shown)\(more)"
    }

    /// The body as a JSON object, or nil. Only bodies that start like an object are parsed.
    static func jsonObject(_ body: [UInt8]) -> [String: JSONValue]? {
        guard let first = body.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }), first == UInt8(ascii: "{"),
            case .object(let object)? = try? JSONValue(parsing: body)
        else { return nil }
        return object
    }
}
