import Foundation
import MQTTCodec
import SwitchyardCore
import SwitchyardPluginKit

/// One instance's broker link settings. The manifest's schema is derived from this type; the
/// sections and checked values are read in MQTTLinkConfiguration+Sections.swift.
struct MQTTLinkConfiguration: PluginConfiguration {
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
    /// `client_id`; ``init(instance:config:)`` makes it `switchyard-<instance>` when absent.
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
    /// `receive_maximum`: the QoS ≥ 1 publishes the broker may send before this link confirms
    /// them (MQTT 5 announces it; a broker that sends more is disconnected with 0x93).
    var receiveMaximum: Int
    var maximumPending: Int
    var echoSuppression: Bool
    /// MQTT Connect profile (`mqtt_connect: true`): see MQTTConnectProfile.swift; nil when off.
    var connect: MQTTConnectProfile?
    /// `share:`: the group every subscription joins as `$share/GROUP/…` (an empty group until
    /// ``init(instance:config:)`` derives it from the instance: `share: true`); nil when off.
    var shareGroup: String?
    /// Whether the configuration names the client; `clientID` is empty otherwise until
    /// ``init(instance:config:)`` names it after the instance.
    private var namesItsClient: Bool
    /// Whether the url is `mqtts://`.
    private var secure: Bool

    static let descriptions = [
        "/url": "mqtt://host:port or mqtts://host:port",
        "/echo_suppression": "MQTT 3.1.1: drop the broker's echo of this link's own publishes (MQTT 5 uses no-local)",
        "/mqtt_connect": "MQTT Connect (iOS app): type phone payloads, keep each phone's SessionObject, attach it when sending",
        "/mqtt_connect_memory": "bytes of SessionObjects kept for MQTT Connect phones (default 16MiB; least recently used forgotten first)",
        "/client_id":
            "default switchyard-<instance>; with share:, -<host>-<random> added at each start, and a lapsed router's session is taken over by another (docs/scale-out.md)",
        "/clean_start":
            "default false when a subscription is QoS 1 or 2 (the broker keeps the session: nothing it sent unconfirmed or queued while the router was down is lost), true otherwise",
        "/receive_maximum":
            "QoS 1/2 publishes the broker may send before they are confirmed (MQTT 5; default 65535); one that sends more is disconnected (0x93)",
        "/session_expiry":
            "seconds the broker keeps the session after a disconnect (MQTT 5); default 3600 when clean_start is false, else 0",
        "/share": "true or a group: subscriptions shared ($share/GROUP/…) by routers running these routes; true: switchyard-<instance>",
    ]

    /// `session_expiry` when the session is kept (`clean_start: false`) and the file does not
    /// say: an hour, longer than any restart, short enough that a broker does not queue for an
    /// instance that is gone for good.
    static let keptSessionExpiry: UInt32 = 3600

    /// Whether the broker keeps the session across a disconnect (and a crash): MQTT 3.1.1
    /// keeps it while `clean_start` is false, MQTT 5 for `session_expiry` seconds.
    var keepsSession: Bool { !cleanStart && (version == .v3_1_1 || sessionExpiry > 0) }

    /// Whether the routers sharing the subscription take over each other's sessions
    /// (MQTTMembership): `share:` without a `client_id`, and a session the broker keeps.
    var takesOverSessions: Bool { shareGroup != nil && !namesItsClient && keepsSession }

    /// A client id of this instance no start has used before: `switchyard-<instance>-<host>-<random>`.
    static func freshClientID(instance: String) -> String {
        "switchyard-\(instance)-\(hostName())-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
    }

    /// The settings of a link that drains the session `memberID` left (MQTTSessionAdoption):
    /// the member's id and kept session, and no will (that is the instance's own).
    func adopting(_ memberID: String) -> MQTTLinkConfiguration {
        var adoption = self
        adoption.clientID = memberID
        adoption.cleanStart = false
        // Kept while it drains: an adopter that dies leaves the session to the next one.
        adoption.sessionExpiry = max(sessionExpiry, Self.keptSessionExpiry)
        adoption.will = nil
        return adoption
    }

    /// The settings of instance `instance`.
    init(instance: String, config: JSONValue) throws(PluginError) {
        self = try Self(config: config)
        if shareGroup == "" { shareGroup = "switchyard-\(instance)" }
        if let group = shareGroup {
            subscriptions = subscriptions.map { subscription in
                // A filter the configuration already shares keeps its own group.
                guard !subscription.filter.hasPrefix("$share/") else { return subscription }
                return Subscription(filter: "$share/\(group)/\(subscription.filter)", qos: subscription.qos, noLocal: false)
            }
        }
        if !namesItsClient {
            // Routers that share the work run the same routes, so the same instance names: a
            // client id of their own keeps the broker from taking one's session for the other's.
            // New at each start: the session an earlier start left is taken over, not resumed.
            clientID = shareGroup == nil ? "switchyard-\(instance)" : Self.freshClientID(instance: instance)
        }
    }

    /// This machine's name, as a client id may hold it (letters, digits, `-`).
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "host" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let kept = String(name.unicodeScalars.filter { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-") }.prefix(64))
        return kept.isEmpty ? "host" : kept
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let url = try container.decode(BrokerURL.self, forKey: .url)
        (host, port, secure) = (url.host, url.port, url.secure)
        tls = try container.decodeIfPresent(TLSSettings.self, forKey: .tls) ?? (secure ? TLSSettings() : nil)
        let version = try container.decode(.version, default: VersionSetting.v5).version
        self.version = version
        namesItsClient = container.contains(.clientID)
        clientID = try container.decodeIfPresent(.clientID, maxLength: 65535) ?? ""
        username = try container.decodeIfPresent(String.self, forKey: .username)
        password = try container.decodeIfPresent(ConfigurationSecret.self, forKey: .password).map { Array($0.value.utf8) }
        let share = try container.decodeIfPresent(ShareSetting.self, forKey: .share)?.group
        shareGroup = share
        subscriptions = try container.decode(.subscriptions, default: [SubscriptionEntry]()).enumerated().map { index, entry in
            // A bridge must not hear its own publishes: MQTT 5 can say so, except on a shared
            // subscription, where the protocol forbids no-local.
            let shared = entry.topic.hasPrefix("$share/") || share != nil
            let noLocal = entry.noLocal ?? (version == .v5 && !shared)
            if noLocal, shared {
                throw ConfigurationError(
                    at: "/subscriptions/\(index)/no_local", "no_local cannot be set on a shared subscription ('\(entry.topic)')")
            }
            return Subscription(filter: entry.topic, qos: entry.qos.qos, noLocal: noLocal)
        }
        // A QoS 1 or 2 subscription is a promise the broker keeps only while it keeps the
        // session: with a clean start, what it had sent and not yet seen confirmed, and what
        // it queued while the router was down, dies with the connection. So such an instance
        // keeps its session by default (as Mosquitto's own bridge does with `cleansession
        // false`): under its stable default id, or with `share:` and no `client_id` under a
        // fresh id that the other routers take over when this one lapses (MQTTMembership).
        // Not with an empty `client_id`, which asks the broker for a fresh one.
        let durable = !(namesItsClient && clientID.isEmpty) && subscriptions.contains { $0.qos != .atMostOnce }
        cleanStart = try container.decode(.cleanStart, default: !durable)
        sessionExpiry = try container.decode(.sessionExpiry, default: cleanStart ? 0 : Self.keptSessionExpiry)
        keepAlive = try container.decode(.keepAlive, default: 30)
        publish = try container.decodeSection(PublishSection.self, forKey: .publish).defaults
        will = try container.decodeIfPresent(WillSection.self, forKey: .will)?.will
        let reconnect = try container.decode(.reconnect, default: BackoffSettings<Reconnect>())
        initialReconnectDelay = UInt64(max(0, reconnect.initialDelay / .nanoseconds(1)))
        maximumReconnectDelay = max(initialReconnectDelay, UInt64(max(0, reconnect.maxDelay / .nanoseconds(1))))
        // At most 65,534 publishes await the broker, so a packet id is always free for the next
        // one, or for SUBSCRIBE and UNSUBSCRIBE. The default is wide because the window, not the
        // broker, caps a stream otherwise: a window of W passes at most W per round trip, and a
        // round trip to a busy broker takes milliseconds (64 held QoS 1 to about 20 k msgs/s on
        // the bridge benchmark, Benchmarks/RESULTS.md, 2026-11-25). An MQTT 5 broker narrows it
        // with its Receive Maximum.
        inflightWindow = try container.decode(.inflight, default: 1024, in: 1...65_534)
        maximumPacketSize = try container.decode(.maximumPacketSize, default: 1 << 20, atLeast: 1024)
        receiveMaximum = try container.decode(.receiveMaximum, default: 65_535, in: 1...65_535)
        maximumPending = try container.decode(.maxPending, default: 10_000, atLeast: 1)
        echoSuppression = try container.decode(.echoSuppression, default: true)
        // MQTT Connect hook: one profile (with its memory of session objects) per instance.
        let memory = try container.decode(.mqttConnectMemory, defaultBytes: MQTTConnectProfile.defaultByteCapacity, atLeastBytes: 1024)
        connect = try container.decode(.mqttConnect, default: false) ? MQTTConnectProfile(byteCapacity: memory) : nil
    }

    func validate() throws {
        if !secure, tls != nil { throw ConfigurationError(at: "/tls", "tls settings need an mqtts:// url") }
        if password != nil, username == nil, version == .v3_1_1 {
            throw ConfigurationError(at: "/password", "MQTT 3.1.1 needs a username with a password")
        }
    }

    private enum CodingKeys: String, CodingKey {
        case url, tls, version, clientID = "client_id", username, password, cleanStart, sessionExpiry, keepAlive, subscriptions, publish
        case will, reconnect, inflight, maximumPacketSize, receiveMaximum, maxPending, echoSuppression, mqttConnect, mqttConnectMemory,
            share
    }
}
