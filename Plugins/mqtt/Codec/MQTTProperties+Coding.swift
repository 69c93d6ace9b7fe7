import NIOCore

/// Where a property list sits: each packet type, and the will, allows its own properties.
enum MQTTPropertyContext: Sendable {
    case connect, will, connack, publish, ack, subscribe, suback, unsubscribe, unsuback, disconnect, auth

    /// How error messages name the property list.
    var description: String {
        self == .will ? "will properties" : "this packet"
    }
}

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

extension MQTTProperties {
    /// The first rule of MQTT 5 the property values break in `context`, if any.
    func problem(in context: MQTTPropertyContext) -> String? {
        if let value = payloadFormatIndicator, value > 1 {
            return "Payload Format Indicator is \(value), not 0 or 1"
        }
        if let value = requestProblemInformation, value > 1 {
            return "Request Problem Information is \(value), not 0 or 1"
        }
        if let value = requestResponseInformation, value > 1 {
            return "Request Response Information is \(value), not 0 or 1"
        }
        if let value = maximumQoS, value > 1 {
            return "Maximum QoS is \(value), not 0 or 1"
        }
        if receiveMaximum == 0 { return "Receive Maximum is 0" }
        if maximumPacketSize == 0 { return "Maximum Packet Size is 0" }
        if topicAlias == 0 { return "Topic Alias is 0" }
        for identifier in subscriptionIdentifiers where !(1...maximumVariableByteInteger).contains(identifier) {
            return "Subscription Identifier \(identifier) is out of the range 1 to \(maximumVariableByteInteger)"
        }
        if context != .publish, subscriptionIdentifiers.count > 1 {
            return "Subscription Identifier appears more than once"
        }
        if let topic = responseTopic, let problem = MQTTTopic.problem(withTopicName: topic) {
            return "Response Topic is invalid: \(problem)"
        }
        if context == .connect, authenticationData != nil, authenticationMethod == nil {
            return "Authentication Data without Authentication Method"
        }
        return nil
    }
}

extension MQTTReader {
    /// Reads a property length and the properties it covers, checking each is allowed in `context`,
    /// occurs no more often than allowed, and has a valid value.
    mutating func readProperties(_ context: MQTTPropertyContext) throws(MQTTCodecError) -> MQTTProperties {
        let length = try readVariableByteInteger("property length")
        var reader = try readReader(length: length, "property length")
        var properties = MQTTProperties()
        var seen: UInt64 = 0
        while !reader.isAtEnd {
            let rawID = try reader.readVariableByteInteger("property identifier")
            guard rawID <= Int(UInt8.max), let id = MQTTPropertyID(rawValue: UInt8(rawID)) else {
                throw .malformed("unknown property identifier 0x\(String(rawID, radix: 16, uppercase: true))")
            }
            guard id.isAllowed(in: context) else {
                throw .malformed("\(id.name) property is not allowed in \(context.description)")
            }
            if !id.isRepeatable(in: context) {
                let bit: UInt64 = 1 << UInt64(id.rawValue)
                guard seen & bit == 0 else { throw .protocolViolation("\(id.name) property appears more than once") }
                seen |= bit
            }
            try reader.readValue(of: id, into: &properties)
        }
        if let problem = properties.problem(in: context) { throw .protocolViolation(problem) }
        return properties
    }

    /// Reads the value of property `id` into `properties`.
    private mutating func readValue(of id: MQTTPropertyID, into properties: inout MQTTProperties) throws(MQTTCodecError) {
        let field = "\(id.name) property"
        switch id {
        case .payloadFormatIndicator: properties.payloadFormatIndicator = try readByte(field)
        case .messageExpiryInterval: properties.messageExpiryInterval = try readUInt32(field)
        case .contentType: properties.contentType = try readString(field)
        case .responseTopic: properties.responseTopic = try readString(field)
        case .correlationData: properties.correlationData = try readBinary(field)
        case .subscriptionIdentifier: properties.subscriptionIdentifiers.append(try readVariableByteInteger(field))
        case .sessionExpiryInterval: properties.sessionExpiryInterval = try readUInt32(field)
        case .assignedClientIdentifier: properties.assignedClientIdentifier = try readString(field)
        case .serverKeepAlive: properties.serverKeepAlive = try readUInt16(field)
        case .authenticationMethod: properties.authenticationMethod = try readString(field)
        case .authenticationData: properties.authenticationData = try readBinary(field)
        case .requestProblemInformation: properties.requestProblemInformation = try readByte(field)
        case .willDelayInterval: properties.willDelayInterval = try readUInt32(field)
        case .requestResponseInformation: properties.requestResponseInformation = try readByte(field)
        case .responseInformation: properties.responseInformation = try readString(field)
        case .serverReference: properties.serverReference = try readString(field)
        case .reasonString: properties.reasonString = try readString(field)
        case .receiveMaximum: properties.receiveMaximum = try readUInt16(field)
        case .topicAliasMaximum: properties.topicAliasMaximum = try readUInt16(field)
        case .topicAlias: properties.topicAlias = try readUInt16(field)
        case .maximumQoS: properties.maximumQoS = try readByte(field)
        case .retainAvailable: properties.retainAvailable = try readFlag(field)
        case .userProperty:
            let name = try readString("\(field) name")
            let value = try readString("\(field) value")
            properties.userProperties.append(MQTTUserProperty(name: name, value: value))
        case .maximumPacketSize: properties.maximumPacketSize = try readUInt32(field)
        case .wildcardSubscriptionAvailable: properties.wildcardSubscriptionAvailable = try readFlag(field)
        case .subscriptionIdentifiersAvailable: properties.subscriptionIdentifiersAvailable = try readFlag(field)
        case .sharedSubscriptionAvailable: properties.sharedSubscriptionAvailable = try readFlag(field)
        }
    }

    /// Reads a byte that must be 0 or 1.
    private mutating func readFlag(_ field: String) throws(MQTTCodecError) -> Bool {
        let value = try readByte(field)
        guard value <= 1 else { throw .protocolViolation("\(field) is \(value), not 0 or 1") }
        return value == 1
    }
}

extension ByteBuffer {
    /// Appends a property length and `properties`, in identifier order; throws for a property not
    /// allowed in `context` or a value MQTT 5 forbids.
    mutating func writeProperties(_ properties: MQTTProperties, _ context: MQTTPropertyContext) throws(MQTTCodecError) {
        if let problem = properties.problem(in: context) { throw .protocolViolation(problem) }
        try writeLengthPrefixed("properties") { (buffer: inout ByteBuffer) throws(MQTTCodecError) in
            try buffer.writePropertyValues(properties, context)
        }
    }

    /// Appends every property that is set.
    private mutating func writePropertyValues(
        _ properties: MQTTProperties, _ context: MQTTPropertyContext
    ) throws(MQTTCodecError) {
        if let value = properties.payloadFormatIndicator {
            try writePropertyID(.payloadFormatIndicator, context)
            writeInteger(value)
        }
        if let value = properties.messageExpiryInterval {
            try writePropertyID(.messageExpiryInterval, context)
            writeInteger(value)
        }
        if let value = properties.contentType {
            try writePropertyID(.contentType, context)
            try writeMQTTString(value, "Content Type property")
        }
        if let value = properties.responseTopic {
            try writePropertyID(.responseTopic, context)
            try writeMQTTString(value, "Response Topic property")
        }
        if let value = properties.correlationData {
            try writePropertyID(.correlationData, context)
            try writeMQTTBinary(value, "Correlation Data property")
        }
        for value in properties.subscriptionIdentifiers {
            try writePropertyID(.subscriptionIdentifier, context)
            try writeVariableByteInteger(value, "Subscription Identifier property")
        }
        if let value = properties.sessionExpiryInterval {
            try writePropertyID(.sessionExpiryInterval, context)
            writeInteger(value)
        }
        if let value = properties.assignedClientIdentifier {
            try writePropertyID(.assignedClientIdentifier, context)
            try writeMQTTString(value, "Assigned Client Identifier property")
        }
        if let value = properties.serverKeepAlive {
            try writePropertyID(.serverKeepAlive, context)
            writeInteger(value)
        }
        if let value = properties.authenticationMethod {
            try writePropertyID(.authenticationMethod, context)
            try writeMQTTString(value, "Authentication Method property")
        }
        if let value = properties.authenticationData {
            try writePropertyID(.authenticationData, context)
            try writeMQTTBinary(value, "Authentication Data property")
        }
        if let value = properties.requestProblemInformation {
            try writePropertyID(.requestProblemInformation, context)
            writeInteger(value)
        }
        if let value = properties.willDelayInterval {
            try writePropertyID(.willDelayInterval, context)
            writeInteger(value)
        }
        if let value = properties.requestResponseInformation {
            try writePropertyID(.requestResponseInformation, context)
            writeInteger(value)
        }
        if let value = properties.responseInformation {
            try writePropertyID(.responseInformation, context)
            try writeMQTTString(value, "Response Information property")
        }
        if let value = properties.serverReference {
            try writePropertyID(.serverReference, context)
            try writeMQTTString(value, "Server Reference property")
        }
        if let value = properties.reasonString {
            try writePropertyID(.reasonString, context)
            try writeMQTTString(value, "Reason String property")
        }
        if let value = properties.receiveMaximum {
            try writePropertyID(.receiveMaximum, context)
            writeInteger(value)
        }
        if let value = properties.topicAliasMaximum {
            try writePropertyID(.topicAliasMaximum, context)
            writeInteger(value)
        }
        if let value = properties.topicAlias {
            try writePropertyID(.topicAlias, context)
            writeInteger(value)
        }
        if let value = properties.maximumQoS {
            try writePropertyID(.maximumQoS, context)
            writeInteger(value)
        }
        if let value = properties.retainAvailable {
            try writePropertyID(.retainAvailable, context)
            writeInteger(UInt8(value ? 1 : 0))
        }
        for pair in properties.userProperties {
            try writePropertyID(.userProperty, context)
            try writeMQTTString(pair.name, "User Property name")
            try writeMQTTString(pair.value, "User Property value")
        }
        if let value = properties.maximumPacketSize {
            try writePropertyID(.maximumPacketSize, context)
            writeInteger(value)
        }
        if let value = properties.wildcardSubscriptionAvailable {
            try writePropertyID(.wildcardSubscriptionAvailable, context)
            writeInteger(UInt8(value ? 1 : 0))
        }
        if let value = properties.subscriptionIdentifiersAvailable {
            try writePropertyID(.subscriptionIdentifiersAvailable, context)
            writeInteger(UInt8(value ? 1 : 0))
        }
        if let value = properties.sharedSubscriptionAvailable {
            try writePropertyID(.sharedSubscriptionAvailable, context)
            writeInteger(UInt8(value ? 1 : 0))
        }
    }

    /// Appends a property identifier after checking the property is allowed in `context`.
    private mutating func writePropertyID(_ id: MQTTPropertyID, _ context: MQTTPropertyContext) throws(MQTTCodecError) {
        guard id.isAllowed(in: context) else {
            throw .protocolViolation("\(id.name) property is not allowed in \(context.description)")
        }
        writeInteger(id.rawValue)
    }
}
