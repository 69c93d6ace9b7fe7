/// The MQTT 5 property identifiers (MQTT 5 section 2.2.2.2).
enum MQTTPropertyID: UInt8, Sendable {
    case payloadFormatIndicator = 0x01
    case messageExpiryInterval = 0x02
    case contentType = 0x03
    case responseTopic = 0x08
    case correlationData = 0x09
    case subscriptionIdentifier = 0x0B
    case sessionExpiryInterval = 0x11
    case assignedClientIdentifier = 0x12
    case serverKeepAlive = 0x13
    case authenticationMethod = 0x15
    case authenticationData = 0x16
    case requestProblemInformation = 0x17
    case willDelayInterval = 0x18
    case requestResponseInformation = 0x19
    case responseInformation = 0x1A
    case serverReference = 0x1C
    case reasonString = 0x1F
    case receiveMaximum = 0x21
    case topicAliasMaximum = 0x22
    case topicAlias = 0x23
    case maximumQoS = 0x24
    case retainAvailable = 0x25
    case userProperty = 0x26
    case maximumPacketSize = 0x27
    case wildcardSubscriptionAvailable = 0x28
    case subscriptionIdentifiersAvailable = 0x29
    case sharedSubscriptionAvailable = 0x2A

    /// The property's name in the specification.
    var name: String {
        switch self {
        case .payloadFormatIndicator: "Payload Format Indicator"
        case .messageExpiryInterval: "Message Expiry Interval"
        case .contentType: "Content Type"
        case .responseTopic: "Response Topic"
        case .correlationData: "Correlation Data"
        case .subscriptionIdentifier: "Subscription Identifier"
        case .sessionExpiryInterval: "Session Expiry Interval"
        case .assignedClientIdentifier: "Assigned Client Identifier"
        case .serverKeepAlive: "Server Keep Alive"
        case .authenticationMethod: "Authentication Method"
        case .authenticationData: "Authentication Data"
        case .requestProblemInformation: "Request Problem Information"
        case .willDelayInterval: "Will Delay Interval"
        case .requestResponseInformation: "Request Response Information"
        case .responseInformation: "Response Information"
        case .serverReference: "Server Reference"
        case .reasonString: "Reason String"
        case .receiveMaximum: "Receive Maximum"
        case .topicAliasMaximum: "Topic Alias Maximum"
        case .topicAlias: "Topic Alias"
        case .maximumQoS: "Maximum QoS"
        case .retainAvailable: "Retain Available"
        case .userProperty: "User Property"
        case .maximumPacketSize: "Maximum Packet Size"
        case .wildcardSubscriptionAvailable: "Wildcard Subscription Available"
        case .subscriptionIdentifiersAvailable: "Subscription Identifier Available"
        case .sharedSubscriptionAvailable: "Shared Subscription Available"
        }
    }

    /// Whether the property may appear in `context` (MQTT 5 table 2-4).
    func isAllowed(in context: MQTTPropertyContext) -> Bool {
        switch self {
        case .payloadFormatIndicator, .messageExpiryInterval, .contentType, .responseTopic, .correlationData:
            context == .publish || context == .will
        case .subscriptionIdentifier:
            context == .publish || context == .subscribe
        case .sessionExpiryInterval:
            context == .connect || context == .connack || context == .disconnect
        case .assignedClientIdentifier, .serverKeepAlive, .responseInformation, .maximumQoS, .retainAvailable,
            .wildcardSubscriptionAvailable, .subscriptionIdentifiersAvailable, .sharedSubscriptionAvailable:
            context == .connack
        case .authenticationMethod, .authenticationData:
            context == .connect || context == .connack || context == .auth
        case .requestProblemInformation, .requestResponseInformation:
            context == .connect
        case .willDelayInterval:
            context == .will
        case .serverReference:
            context == .connack || context == .disconnect
        case .reasonString:
            switch context {
            case .connack, .ack, .suback, .unsuback, .disconnect, .auth: true
            case .connect, .will, .publish, .subscribe, .unsubscribe: false
            }
        case .receiveMaximum, .topicAliasMaximum, .maximumPacketSize:
            context == .connect || context == .connack
        case .topicAlias:
            context == .publish
        case .userProperty:
            true
        }
    }

    /// Whether the property may appear more than once in `context`.
    func isRepeatable(in context: MQTTPropertyContext) -> Bool {
        switch self {
        case .userProperty: true
        case .subscriptionIdentifier: context == .publish
        default: false
        }
    }
}
