/// The MQTT protocol version spoken on a connection; the raw value is the CONNECT protocol level.
public enum MQTTVersion: UInt8, Sendable {
    /// MQTT 3.1.1 (protocol level 4).
    case v3_1_1 = 4
    /// MQTT 5.0 (protocol level 5).
    case v5 = 5

    /// "MQTT 3.1.1" or "MQTT 5", for messages.
    var displayName: String {
        switch self {
        case .v3_1_1: "MQTT 3.1.1"
        case .v5: "MQTT 5"
        }
    }
}

/// The quality of service of a message delivery.
public enum MQTTQoS: UInt8, Sendable, Comparable {
    /// Delivered at most once, without acknowledgement.
    case atMostOnce = 0
    /// Delivered at least once: PUBLISH, PUBACK.
    case atLeastOnce = 1
    /// Delivered exactly once: PUBLISH, PUBREC, PUBREL, PUBCOMP.
    case exactlyOnce = 2

    /// Orders levels of service by their wire value.
    public static func < (lhs: MQTTQoS, rhs: MQTTQoS) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}

/// The Will Message the server publishes when the connection ends without a DISCONNECT.
public struct MQTTWill: Sendable, Equatable {
    /// The topic name the will is published to.
    public var topic: String
    /// The message body.
    public var payload: [UInt8]
    /// The quality of service of the will publication.
    public var qos: MQTTQoS
    /// Whether the will is published as a retained message.
    public var retain: Bool
    /// MQTT 5 will properties (Will Delay Interval, Payload Format Indicator, Message Expiry Interval,
    /// Content Type, Response Topic, Correlation Data, User Property).
    public var properties: MQTTProperties

    /// Creates a will.
    public init(topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool, properties: MQTTProperties = .init()) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties = properties
    }
}

/// CONNECT: the first packet a client sends.
public struct MQTTConnect: Sendable, Equatable {
    /// The client identifier; may be empty, in which case the server assigns one (MQTT 5) or
    /// requires `cleanStart` (3.1.1).
    public var clientID: String
    /// Clean Start (MQTT 5) or Clean Session (3.1.1).
    public var cleanStart: Bool
    /// The keep-alive interval in seconds; 0 turns keep-alive off.
    public var keepAlive: UInt16
    /// The user name, if any.
    public var username: String?
    /// The password, if any. MQTT 3.1.1 allows it only together with a user name.
    public var password: [UInt8]?
    /// The will message, if any.
    public var will: MQTTWill?
    /// MQTT 5 CONNECT properties.
    public var properties: MQTTProperties

    /// Creates a CONNECT packet.
    public init(
        clientID: String, cleanStart: Bool, keepAlive: UInt16, username: String? = nil, password: [UInt8]? = nil,
        will: MQTTWill? = nil, properties: MQTTProperties = .init()
    ) {
        self.clientID = clientID
        self.cleanStart = cleanStart
        self.keepAlive = keepAlive
        self.username = username
        self.password = password
        self.will = will
        self.properties = properties
    }
}

/// CONNACK: the server's answer to CONNECT.
public struct MQTTConnAck: Sendable, Equatable {
    /// Whether the server resumed an existing session.
    public var sessionPresent: Bool
    /// The MQTT 5 reason code, or the 3.1.1 return code as it came (0 accepts the connection in both).
    public var reasonCode: UInt8
    /// MQTT 5 CONNACK properties.
    public var properties: MQTTProperties

    /// Creates a CONNACK packet.
    public init(sessionPresent: Bool = false, reasonCode: UInt8 = 0, properties: MQTTProperties = .init()) {
        self.sessionPresent = sessionPresent
        self.reasonCode = reasonCode
        self.properties = properties
    }
}

/// PUBLISH: an application message, in either direction.
public struct MQTTPublish: Sendable, Equatable {
    /// The topic name; MQTT 5 allows it to be empty when the Topic Alias property is set.
    public var topic: String
    /// The message body.
    public var payload: [UInt8]
    /// The quality of service.
    public var qos: MQTTQoS
    /// The retain flag.
    public var retain: Bool
    /// The DUP flag: this is a redelivery. Only allowed for QoS > 0.
    public var dup: Bool
    /// The packet identifier: required, and non-zero, for QoS > 0; absent for QoS 0.
    public var packetID: UInt16?
    /// MQTT 5 PUBLISH properties.
    public var properties: MQTTProperties

    /// Creates a PUBLISH packet.
    public init(
        topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false, dup: Bool = false,
        packetID: UInt16? = nil, properties: MQTTProperties = .init()
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.dup = dup
        self.packetID = packetID
        self.properties = properties
    }
}

/// PUBACK, PUBREC, PUBREL or PUBCOMP: a step of the QoS 1 and QoS 2 flows.
public struct MQTTAck: Sendable, Equatable {
    /// The identifier of the PUBLISH being acknowledged.
    public var packetID: UInt16
    /// The MQTT 5 reason code (always 0 with 3.1.1).
    public var reasonCode: UInt8
    /// MQTT 5 properties (Reason String, User Property).
    public var properties: MQTTProperties

    /// Creates an acknowledgement.
    public init(packetID: UInt16, reasonCode: UInt8 = 0, properties: MQTTProperties = .init()) {
        self.packetID = packetID
        self.reasonCode = reasonCode
        self.properties = properties
    }
}

/// One topic filter of a SUBSCRIBE packet with its subscription options.
public struct MQTTSubscription: Sendable, Equatable {
    /// The topic filter, possibly with wildcards or a `$share/GROUP/` prefix.
    public var topicFilter: String
    /// The maximum quality of service the client accepts.
    public var qos: MQTTQoS
    /// MQTT 5 No Local: do not send the client its own publications.
    public var noLocal: Bool
    /// MQTT 5 Retain As Published: keep the retain flag of forwarded messages.
    public var retainAsPublished: Bool
    /// MQTT 5 Retain Handling: 0 send retained messages on subscribe, 1 only for a new subscription,
    /// 2 never.
    public var retainHandling: UInt8

    /// Creates a subscription.
    public init(
        topicFilter: String, qos: MQTTQoS, noLocal: Bool = false, retainAsPublished: Bool = false,
        retainHandling: UInt8 = 0
    ) {
        self.topicFilter = topicFilter
        self.qos = qos
        self.noLocal = noLocal
        self.retainAsPublished = retainAsPublished
        self.retainHandling = retainHandling
    }
}

/// SUBSCRIBE: asks the server for the messages of one or more topic filters.
public struct MQTTSubscribe: Sendable, Equatable {
    /// The non-zero packet identifier the SUBACK echoes.
    public var packetID: UInt16
    /// The filters with their options; at least one.
    public var subscriptions: [MQTTSubscription]
    /// MQTT 5 properties (Subscription Identifier, User Property).
    public var properties: MQTTProperties

    /// Creates a SUBSCRIBE packet.
    public init(packetID: UInt16, subscriptions: [MQTTSubscription], properties: MQTTProperties = .init()) {
        self.packetID = packetID
        self.subscriptions = subscriptions
        self.properties = properties
    }
}

/// SUBACK: the server's answer to SUBSCRIBE.
public struct MQTTSubAck: Sendable, Equatable {
    /// The identifier of the SUBSCRIBE being answered.
    public var packetID: UInt16
    /// One code per filter: the granted QoS (0, 1, 2) or a failure (0x80 and above; 3.1.1 has only 0x80).
    public var reasonCodes: [UInt8]
    /// MQTT 5 properties (Reason String, User Property).
    public var properties: MQTTProperties

    /// Creates a SUBACK packet.
    public init(packetID: UInt16, reasonCodes: [UInt8], properties: MQTTProperties = .init()) {
        self.packetID = packetID
        self.reasonCodes = reasonCodes
        self.properties = properties
    }
}

/// UNSUBSCRIBE: removes subscriptions.
public struct MQTTUnsubscribe: Sendable, Equatable {
    /// The non-zero packet identifier the UNSUBACK echoes.
    public var packetID: UInt16
    /// The topic filters to remove, exactly as they were subscribed; at least one.
    public var topicFilters: [String]
    /// MQTT 5 properties (User Property).
    public var properties: MQTTProperties

    /// Creates an UNSUBSCRIBE packet.
    public init(packetID: UInt16, topicFilters: [String], properties: MQTTProperties = .init()) {
        self.packetID = packetID
        self.topicFilters = topicFilters
        self.properties = properties
    }
}

/// UNSUBACK: the server's answer to UNSUBSCRIBE.
public struct MQTTUnsubAck: Sendable, Equatable {
    /// The identifier of the UNSUBSCRIBE being answered.
    public var packetID: UInt16
    /// MQTT 5: one reason code per filter. Always empty with 3.1.1, whose UNSUBACK has none.
    public var reasonCodes: [UInt8]
    /// MQTT 5 properties (Reason String, User Property).
    public var properties: MQTTProperties

    /// Creates an UNSUBACK packet.
    public init(packetID: UInt16, reasonCodes: [UInt8] = [], properties: MQTTProperties = .init()) {
        self.packetID = packetID
        self.reasonCodes = reasonCodes
        self.properties = properties
    }
}

/// DISCONNECT: the orderly end of a connection (sent by either side with MQTT 5).
public struct MQTTDisconnect: Sendable, Equatable {
    /// The MQTT 5 reason code; 0 is a normal disconnection (always 0 with 3.1.1).
    public var reasonCode: UInt8
    /// MQTT 5 properties (Session Expiry Interval, Reason String, Server Reference, User Property).
    public var properties: MQTTProperties

    /// Creates a DISCONNECT packet.
    public init(reasonCode: UInt8 = 0, properties: MQTTProperties = .init()) {
        self.reasonCode = reasonCode
        self.properties = properties
    }
}

/// An MQTT control packet.
public enum MQTTPacket: Sendable, Equatable {
    /// CONNECT, client to server.
    case connect(MQTTConnect)
    /// CONNACK, server to client.
    case connack(MQTTConnAck)
    /// PUBLISH, both ways.
    case publish(MQTTPublish)
    /// PUBACK, both ways: QoS 1 acknowledgement.
    case puback(MQTTAck)
    /// PUBREC, both ways: QoS 2 receipt.
    case pubrec(MQTTAck)
    /// PUBREL, both ways: QoS 2 release.
    case pubrel(MQTTAck)
    /// PUBCOMP, both ways: QoS 2 completion.
    case pubcomp(MQTTAck)
    /// SUBSCRIBE, client to server.
    case subscribe(MQTTSubscribe)
    /// SUBACK, server to client.
    case suback(MQTTSubAck)
    /// UNSUBSCRIBE, client to server.
    case unsubscribe(MQTTUnsubscribe)
    /// UNSUBACK, server to client.
    case unsuback(MQTTUnsubAck)
    /// PINGREQ, client to server.
    case pingreq
    /// PINGRESP, server to client.
    case pingresp
    /// DISCONNECT, client to server (both ways with MQTT 5).
    case disconnect(MQTTDisconnect)
    /// AUTH, both ways; MQTT 5 only.
    case auth(reasonCode: UInt8, properties: MQTTProperties)

    /// "PUBLISH", "CONNACK", … for logs and errors.
    public var name: String { packetType.name }

    /// The packet's control packet type.
    var packetType: MQTTPacketType {
        switch self {
        case .connect: .connect
        case .connack: .connack
        case .publish: .publish
        case .puback: .puback
        case .pubrec: .pubrec
        case .pubrel: .pubrel
        case .pubcomp: .pubcomp
        case .subscribe: .subscribe
        case .suback: .suback
        case .unsubscribe: .unsubscribe
        case .unsuback: .unsuback
        case .pingreq: .pingreq
        case .pingresp: .pingresp
        case .disconnect: .disconnect
        case .auth: .auth
        }
    }
}

/// Formats a byte as `0xNN`.
func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
}

/// The return codes of an MQTT 3.1.1 SUBACK: QoS 0, 1, 2 granted, or failure.
let validSubAckReturnCodes: [UInt8] = [0x00, 0x01, 0x02, 0x80]

/// Whether `filter` is a `$share/GROUP/filter` shared subscription.
func isSharedFilter(_ filter: String) -> Bool {
    filter.utf8.starts(with: "$share/".utf8)
}

/// What is wrong with a PUBLISH's topic name, if anything: MQTT 5 allows an empty name with a Topic Alias.
func publishTopicProblem(_ topic: String, _ properties: MQTTProperties, version: MQTTVersion) -> String? {
    if topic.isEmpty, version == .v5, properties.topicAlias != nil { return nil }
    return MQTTTopic.problem(withTopicName: topic)
}
