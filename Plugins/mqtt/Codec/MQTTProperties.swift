/// An MQTT 5 User Property: a name-value pair of UTF-8 strings; names may repeat.
public struct MQTTUserProperty: Sendable, Equatable {
    /// The property name.
    public var name: String
    /// The property value.
    public var value: String

    /// Creates a user property.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// MQTT 5 properties: all optional and empty by default.
///
/// One type serves every packet; each packet type allows only some properties (MQTT 5 section 2.2.2.2).
/// Encoding a property the packet type does not allow throws; with MQTT 3.1.1, which has no
/// properties, they are ignored on encoding and always empty on decoding.
public struct MQTTProperties: Sendable, Equatable {
    /// Creates empty properties.
    public init() {}

    /// Payload Format Indicator (0x01; PUBLISH, will): 0 unspecified bytes, 1 UTF-8 text.
    public var payloadFormatIndicator: UInt8?
    /// Message Expiry Interval in seconds (0x02; PUBLISH, will).
    public var messageExpiryInterval: UInt32?
    /// Content Type, a MIME type or any other description of the payload (0x03; PUBLISH, will).
    public var contentType: String?
    /// Response Topic for request/response (0x08; PUBLISH, will); a topic name without wildcards.
    public var responseTopic: String?
    /// Correlation Data for request/response (0x09; PUBLISH, will).
    public var correlationData: [UInt8]?
    /// Subscription Identifiers (0x0B): any number in a PUBLISH from the server, at most one in SUBSCRIBE;
    /// each 1 to 268,435,455.
    public var subscriptionIdentifiers: [Int] = []
    /// Session Expiry Interval in seconds (0x11; CONNECT, CONNACK, DISCONNECT).
    public var sessionExpiryInterval: UInt32?
    /// Assigned Client Identifier (0x12; CONNACK).
    public var assignedClientIdentifier: String?
    /// Server Keep Alive in seconds, overriding the client's (0x13; CONNACK).
    public var serverKeepAlive: UInt16?
    /// Authentication Method for extended authentication (0x15; CONNECT, CONNACK, AUTH).
    public var authenticationMethod: String?
    /// Authentication Data (0x16; CONNECT, CONNACK, AUTH).
    public var authenticationData: [UInt8]?
    /// Request Problem Information, 0 or 1 (0x17; CONNECT).
    public var requestProblemInformation: UInt8?
    /// Will Delay Interval in seconds (0x18; will).
    public var willDelayInterval: UInt32?
    /// Request Response Information, 0 or 1 (0x19; CONNECT).
    public var requestResponseInformation: UInt8?
    /// Response Information (0x1A; CONNACK).
    public var responseInformation: String?
    /// Server Reference, another server to use (0x1C; CONNACK, DISCONNECT).
    public var serverReference: String?
    /// Reason String, human-readable diagnostics (0x1F; acknowledgements, DISCONNECT, AUTH).
    public var reasonString: String?
    /// Receive Maximum, the number of unacknowledged QoS > 0 publications accepted; not 0
    /// (0x21; CONNECT, CONNACK).
    public var receiveMaximum: UInt16?
    /// Topic Alias Maximum (0x22; CONNECT, CONNACK).
    public var topicAliasMaximum: UInt16?
    /// Topic Alias, not 0 (0x23; PUBLISH).
    public var topicAlias: UInt16?
    /// Maximum QoS the server supports, 0 or 1 (0x24; CONNACK); absent means 2.
    public var maximumQoS: UInt8?
    /// Retain Available (0x25; CONNACK); absent means available.
    public var retainAvailable: Bool?
    /// User Properties (0x26; every packet with properties), in order.
    public var userProperties: [MQTTUserProperty] = []
    /// Maximum Packet Size in bytes, not 0 (0x27; CONNECT, CONNACK).
    public var maximumPacketSize: UInt32?
    /// Wildcard Subscription Available (0x28; CONNACK); absent means available.
    public var wildcardSubscriptionAvailable: Bool?
    /// Subscription Identifiers Available (0x29; CONNACK); absent means available.
    public var subscriptionIdentifiersAvailable: Bool?
    /// Shared Subscription Available (0x2A; CONNACK); absent means available.
    public var sharedSubscriptionAvailable: Bool?
}

extension MQTTProperties {
    /// Whether no property is set.
    var isEmpty: Bool { self == MQTTProperties() }
}
