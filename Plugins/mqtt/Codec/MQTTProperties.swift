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
///
/// The values live in shared copy-on-write storage: a packet is copied several times on its way
/// (enum payloads, queues, the inflight window), most carry no properties at all, and 27 inline
/// optional fields made every copy move some 400 bytes and retain and release each field.
public struct MQTTProperties: Sendable, Equatable {
    private var storage: Storage

    /// Creates empty properties.
    public init() { storage = Self.empty }

    /// The storage of every empty value (never mutated: a write to it copies first).
    private static let empty = Storage(Values())

    public static func == (lhs: MQTTProperties, rhs: MQTTProperties) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.values == rhs.storage.values
    }

    /// Whether no property is set.
    var isEmpty: Bool { storage === Self.empty || storage.values == Values() }

    /// Changes the values, copying the storage first unless this value is its only owner.
    private mutating func update(_ change: (inout Values) -> Void) {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.values) }
        change(&storage.values)
    }

    /// Payload Format Indicator (0x01; PUBLISH, will): 0 unspecified bytes, 1 UTF-8 text.
    public var payloadFormatIndicator: UInt8? {
        get { storage.values.payloadFormatIndicator }
        set { update { $0.payloadFormatIndicator = newValue } }
    }

    /// Message Expiry Interval in seconds (0x02; PUBLISH, will).
    public var messageExpiryInterval: UInt32? {
        get { storage.values.messageExpiryInterval }
        set { update { $0.messageExpiryInterval = newValue } }
    }

    /// Content Type, a MIME type or any other description of the payload (0x03; PUBLISH, will).
    public var contentType: String? {
        get { storage.values.contentType }
        set { update { $0.contentType = newValue } }
    }

    /// Response Topic for request/response (0x08; PUBLISH, will); a topic name without wildcards.
    public var responseTopic: String? {
        get { storage.values.responseTopic }
        set { update { $0.responseTopic = newValue } }
    }

    /// Correlation Data for request/response (0x09; PUBLISH, will).
    public var correlationData: [UInt8]? {
        get { storage.values.correlationData }
        set { update { $0.correlationData = newValue } }
    }

    /// Subscription Identifiers (0x0B): any number in a PUBLISH from the server, at most one in SUBSCRIBE;
    /// each 1 to 268,435,455.
    public var subscriptionIdentifiers: [Int] {
        get { storage.values.subscriptionIdentifiers }
        set { update { $0.subscriptionIdentifiers = newValue } }
    }

    /// Session Expiry Interval in seconds (0x11; CONNECT, CONNACK, DISCONNECT).
    public var sessionExpiryInterval: UInt32? {
        get { storage.values.sessionExpiryInterval }
        set { update { $0.sessionExpiryInterval = newValue } }
    }

    /// Assigned Client Identifier (0x12; CONNACK).
    public var assignedClientIdentifier: String? {
        get { storage.values.assignedClientIdentifier }
        set { update { $0.assignedClientIdentifier = newValue } }
    }

    /// Server Keep Alive in seconds, overriding the client's (0x13; CONNACK).
    public var serverKeepAlive: UInt16? {
        get { storage.values.serverKeepAlive }
        set { update { $0.serverKeepAlive = newValue } }
    }

    /// Authentication Method for extended authentication (0x15; CONNECT, CONNACK, AUTH).
    public var authenticationMethod: String? {
        get { storage.values.authenticationMethod }
        set { update { $0.authenticationMethod = newValue } }
    }

    /// Authentication Data (0x16; CONNECT, CONNACK, AUTH).
    public var authenticationData: [UInt8]? {
        get { storage.values.authenticationData }
        set { update { $0.authenticationData = newValue } }
    }

    /// Request Problem Information, 0 or 1 (0x17; CONNECT).
    public var requestProblemInformation: UInt8? {
        get { storage.values.requestProblemInformation }
        set { update { $0.requestProblemInformation = newValue } }
    }

    /// Will Delay Interval in seconds (0x18; will).
    public var willDelayInterval: UInt32? {
        get { storage.values.willDelayInterval }
        set { update { $0.willDelayInterval = newValue } }
    }

    /// Request Response Information, 0 or 1 (0x19; CONNECT).
    public var requestResponseInformation: UInt8? {
        get { storage.values.requestResponseInformation }
        set { update { $0.requestResponseInformation = newValue } }
    }

    /// Response Information (0x1A; CONNACK).
    public var responseInformation: String? {
        get { storage.values.responseInformation }
        set { update { $0.responseInformation = newValue } }
    }

    /// Server Reference, another server to use (0x1C; CONNACK, DISCONNECT).
    public var serverReference: String? {
        get { storage.values.serverReference }
        set { update { $0.serverReference = newValue } }
    }

    /// Reason String, human-readable diagnostics (0x1F; acknowledgements, DISCONNECT, AUTH).
    public var reasonString: String? {
        get { storage.values.reasonString }
        set { update { $0.reasonString = newValue } }
    }

    /// Receive Maximum, the number of unacknowledged QoS > 0 publications accepted; not 0
    /// (0x21; CONNECT, CONNACK).
    public var receiveMaximum: UInt16? {
        get { storage.values.receiveMaximum }
        set { update { $0.receiveMaximum = newValue } }
    }

    /// Topic Alias Maximum (0x22; CONNECT, CONNACK).
    public var topicAliasMaximum: UInt16? {
        get { storage.values.topicAliasMaximum }
        set { update { $0.topicAliasMaximum = newValue } }
    }

    /// Topic Alias, not 0 (0x23; PUBLISH).
    public var topicAlias: UInt16? {
        get { storage.values.topicAlias }
        set { update { $0.topicAlias = newValue } }
    }

    /// Maximum QoS the server supports, 0 or 1 (0x24; CONNACK); absent means 2.
    public var maximumQoS: UInt8? {
        get { storage.values.maximumQoS }
        set { update { $0.maximumQoS = newValue } }
    }

    /// Retain Available (0x25; CONNACK); absent means available.
    public var retainAvailable: Bool? {
        get { storage.values.retainAvailable }
        set { update { $0.retainAvailable = newValue } }
    }

    /// User Properties (0x26; every packet with properties), in order.
    public var userProperties: [MQTTUserProperty] {
        get { storage.values.userProperties }
        set { update { $0.userProperties = newValue } }
    }

    /// Maximum Packet Size in bytes, not 0 (0x27; CONNECT, CONNACK).
    public var maximumPacketSize: UInt32? {
        get { storage.values.maximumPacketSize }
        set { update { $0.maximumPacketSize = newValue } }
    }

    /// Wildcard Subscription Available (0x28; CONNACK); absent means available.
    public var wildcardSubscriptionAvailable: Bool? {
        get { storage.values.wildcardSubscriptionAvailable }
        set { update { $0.wildcardSubscriptionAvailable = newValue } }
    }

    /// Subscription Identifiers Available (0x29; CONNACK); absent means available.
    public var subscriptionIdentifiersAvailable: Bool? {
        get { storage.values.subscriptionIdentifiersAvailable }
        set { update { $0.subscriptionIdentifiersAvailable = newValue } }
    }

    /// Shared Subscription Available (0x2A; CONNACK); absent means available.
    public var sharedSubscriptionAvailable: Bool? {
        get { storage.values.sharedSubscriptionAvailable }
        set { update { $0.sharedSubscriptionAvailable = newValue } }
    }
}

extension MQTTProperties {
    /// The property values, one field per property.
    struct Values: Sendable, Equatable {
        var payloadFormatIndicator: UInt8?
        var messageExpiryInterval: UInt32?
        var contentType: String?
        var responseTopic: String?
        var correlationData: [UInt8]?
        var subscriptionIdentifiers: [Int] = []
        var sessionExpiryInterval: UInt32?
        var assignedClientIdentifier: String?
        var serverKeepAlive: UInt16?
        var authenticationMethod: String?
        var authenticationData: [UInt8]?
        var requestProblemInformation: UInt8?
        var willDelayInterval: UInt32?
        var requestResponseInformation: UInt8?
        var responseInformation: String?
        var serverReference: String?
        var reasonString: String?
        var receiveMaximum: UInt16?
        var topicAliasMaximum: UInt16?
        var topicAlias: UInt16?
        var maximumQoS: UInt8?
        var retainAvailable: Bool?
        var userProperties: [MQTTUserProperty] = []
        var maximumPacketSize: UInt32?
        var wildcardSubscriptionAvailable: Bool?
        var subscriptionIdentifiersAvailable: Bool?
        var sharedSubscriptionAvailable: Bool?
    }

    /// No lock: its values change only in ``MQTTProperties/update(_:)``, while exactly one
    /// ``MQTTProperties`` refers to it (copy-on-write), so no other thread can see the change.
    final class Storage: @unchecked Sendable {
        var values: Values

        init(_ values: Values) { self.values = values }
    }
}
