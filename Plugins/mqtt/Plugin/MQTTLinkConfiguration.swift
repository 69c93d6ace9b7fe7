import MQTTCodec
import SwitchyardCore
import SwitchyardPluginKit

/// One instance's broker link settings, read from its YAML configuration (already checked
/// against the manifest's schema by the router; the checks here are the ones a schema cannot
/// express).
struct MQTTLinkConfiguration: Sendable {
    struct Subscription: Sendable {
        var filter: String
        var qos: MQTTQoS
        var noLocal: Bool
    }

    struct PublishDefaults: Sendable {
        var topic: String?
        var qos: MQTTQoS
        var retain: Bool
    }

    var host: String
    var port: Int
    var tls: TLSSettings?
    var version: MQTTVersion
    var clientID: String
    var username: String?
    var password: [UInt8]?
    var cleanStart: Bool
    var sessionExpiry: UInt32
    var keepAlive: UInt16
    var subscriptions: [Subscription]
    var publish: PublishDefaults
    var will: MQTTWill?
    var initialReconnectDelay: UInt64
    var maximumReconnectDelay: UInt64
    var inflightWindow: Int
    var maximumPacketSize: Int
    var maximumPending: Int
    var echoSuppression: Bool
    /// MQTT Connect profile (`mqtt_connect: true`): see MQTTConnectProfile.swift; nil when off.
    var connect: MQTTConnectProfile?

    init(instance: String, config: JSONValue) throws {
        guard let url = config["url"]?.stringValue else { throw PluginError("url is required, e.g. mqtt://127.0.0.1:1883") }
        let secure: Bool
        let rest: Substring
        if url.hasPrefix("mqtts://") {
            secure = true
            rest = url.dropFirst("mqtts://".count)
        } else if url.hasPrefix("mqtt://") {
            secure = false
            rest = url.dropFirst("mqtt://".count)
        } else {
            throw PluginError("url must start with mqtt:// or mqtts://")
        }
        let authority = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? rest
        // Credentials in the URL would end up in every connection error; they have their own
        // keys. The message does not repeat the URL, so it does not repeat the password.
        guard !authority.contains("@") else {
            throw PluginError("url must not carry credentials (user@ or user:password@): use username and password")
        }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            port = after.hasPrefix(":") ? Int(after.dropFirst()) ?? -1 : (secure ? 8883 : 1883)
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = Int(authority[authority.index(after: colon)...]) ?? -1
        } else {
            host = String(authority)
            port = secure ? 8883 : 1883
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw PluginError("url '\(url)' has no valid host and port") }

        let tlsConfig = config["tls"]
        if secure || tlsConfig != nil {
            guard secure else { throw PluginError("tls settings need an mqtts:// url") }
            tls = try TLSSettings(tlsConfig ?? [:])
        } else {
            tls = nil
        }

        switch config["version"] {
        case nil, .int(5)?, .string("5")?: version = .v5
        case .string("3.1.1")?: version = .v3_1_1
        default: throw PluginError("version must be 5 or \"3.1.1\"")
        }
        clientID = config["client_id"]?.stringValue ?? "switchyard-\(instance)"
        username = config["username"]?.stringValue
        password = config["password"]?.stringValue.map { Array($0.utf8) }
        if password != nil, username == nil, version == .v3_1_1 {
            throw PluginError("MQTT 3.1.1 needs a username with a password")
        }
        cleanStart = config["clean_start"]?.boolValue ?? true
        sessionExpiry = UInt32(clamping: config["session_expiry"]?.intValue ?? 0)
        keepAlive = UInt16(clamping: config["keep_alive"]?.intValue ?? 30)

        func qos(_ value: JSONValue?, _ what: String) throws -> MQTTQoS {
            guard let value else { return .atMostOnce }
            guard let number = value.intValue, let qos = MQTTQoS(rawValue: UInt8(clamping: number)), number >= 0 else {
                throw PluginError("\(what) must be 0, 1 or 2")
            }
            return qos
        }
        var subscriptions: [Subscription] = []
        for (index, entry) in (config["subscriptions"]?.arrayValue ?? []).enumerated() {
            guard let filter = entry["topic"]?.stringValue else { throw PluginError("subscriptions[\(index)].topic is required") }
            if let problem = MQTTTopic.problem(withTopicFilter: filter) {
                throw PluginError("subscriptions[\(index)].topic '\(filter)': \(problem)")
            }
            // A bridge must not hear its own publishes: MQTT 5 can say so, except on a shared
            // subscription, where the protocol forbids no-local.
            let shared = filter.hasPrefix("$share/")
            let noLocal = entry["no_local"]?.boolValue ?? (version == .v5 && !shared)
            if noLocal, shared {
                throw PluginError("subscriptions[\(index)]: no_local cannot be set on a shared subscription ('\(filter)')")
            }
            subscriptions.append(Subscription(filter: filter, qos: try qos(entry["qos"], "subscriptions[\(index)].qos"), noLocal: noLocal))
        }
        self.subscriptions = subscriptions

        let publishConfig = config["publish"]
        if let topic = publishConfig?["topic"]?.stringValue, let problem = MQTTTopic.problem(withTopicName: topic) {
            throw PluginError("publish.topic '\(topic)': \(problem)")
        }
        publish = PublishDefaults(
            topic: publishConfig?["topic"]?.stringValue,
            qos: try qos(publishConfig?["qos"], "publish.qos"),
            retain: publishConfig?["retain"]?.boolValue ?? false
        )

        if let willConfig = config["will"] {
            guard let topic = willConfig["topic"]?.stringValue else { throw PluginError("will.topic is required") }
            will = MQTTWill(
                topic: topic,
                payload: Array((willConfig["payload"]?.stringValue ?? "").utf8),
                qos: try qos(willConfig["qos"], "will.qos"),
                retain: willConfig["retain"]?.boolValue ?? false
            )
        } else {
            will = nil
        }

        let reconnect = config["reconnect"]
        // A malformed duration is refused naming the setting, not replaced by the default.
        let initial = try PluginError.duration(reconnect?["initial_delay"], "reconnect.initial_delay", default: .milliseconds(500))
        let maximum = try PluginError.duration(reconnect?["max_delay"], "reconnect.max_delay", default: .seconds(30))
        // Bounded so the backoff arithmetic stays far from overflowing (and a day is plenty).
        for (value, name) in [(initial, "reconnect.initial_delay"), (maximum, "reconnect.max_delay")] where value > .seconds(86_400) {
            throw PluginError("\(name): at most 24h")
        }
        initialReconnectDelay = UInt64(max(0, initial / .nanoseconds(1)))
        maximumReconnectDelay = max(initialReconnectDelay, UInt64(max(0, maximum / .nanoseconds(1))))
        // At most 65,534 publishes await the broker, so a packet id is always free for the next
        // one, or for SUBSCRIBE and UNSUBSCRIBE.
        inflightWindow = min(65_534, max(1, config["inflight"]?.intValue ?? 64))
        maximumPacketSize = max(1024, config["maximum_packet_size"]?.intValue ?? 1 << 20)
        maximumPending = max(1, config["max_pending"]?.intValue ?? 10_000)
        echoSuppression = config["echo_suppression"]?.boolValue ?? true
        // MQTT Connect hook: one profile (with its memory of session objects) per instance.
        let memory = config["mqtt_connect_memory"].map { ByteSizeText.bytes($0) } ?? MQTTConnectProfile.defaultByteCapacity
        guard let memory, memory >= 1024 else { throw PluginError("mqtt_connect_memory must be a size of at least 1KiB, like 16MiB") }
        connect = config["mqtt_connect"]?.boolValue == true ? MQTTConnectProfile(byteCapacity: memory) : nil
    }
}
