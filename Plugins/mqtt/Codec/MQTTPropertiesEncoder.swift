import NIOCore

/// Encodes one MQTT 5 property list: its length, then every property that is set, in identifier
/// order.
///
/// It owns the list and where the list sits, which decides the properties allowed: encoding
/// checks each one against it. ``MQTTProperties`` itself is the values alone, as the code that
/// builds and reads packets uses them.
struct MQTTPropertiesEncoder {
    private let properties: MQTTProperties
    private let context: MQTTPropertyContext

    /// Encodes `properties` as the list of a packet or will described by `context`.
    init(_ properties: MQTTProperties, _ context: MQTTPropertyContext) {
        self.properties = properties
        self.context = context
    }

    /// Appends the property length and the properties; throws for a property not allowed in the
    /// context or a value MQTT 5 forbids.
    func encode(into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        if let problem = properties.problem(in: context) { throw .protocolViolation(problem) }
        try buffer.writeLengthPrefixed("properties") { (list: inout ByteBuffer) throws(MQTTCodecError) in
            try encodeValues(into: &list)
        }
    }

    /// Appends every property that is set.
    private func encodeValues(into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        if let value = properties.payloadFormatIndicator {
            try encodeID(.payloadFormatIndicator, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.messageExpiryInterval {
            try encodeID(.messageExpiryInterval, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.contentType {
            try encodeID(.contentType, into: &buffer)
            try buffer.writeMQTTString(value, "Content Type property")
        }
        if let value = properties.responseTopic {
            try encodeID(.responseTopic, into: &buffer)
            try buffer.writeMQTTString(value, "Response Topic property")
        }
        if let value = properties.correlationData {
            try encodeID(.correlationData, into: &buffer)
            try buffer.writeMQTTBinary(value, "Correlation Data property")
        }
        for value in properties.subscriptionIdentifiers {
            try encodeID(.subscriptionIdentifier, into: &buffer)
            try buffer.writeVariableByteInteger(value, "Subscription Identifier property")
        }
        if let value = properties.sessionExpiryInterval {
            try encodeID(.sessionExpiryInterval, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.assignedClientIdentifier {
            try encodeID(.assignedClientIdentifier, into: &buffer)
            try buffer.writeMQTTString(value, "Assigned Client Identifier property")
        }
        if let value = properties.serverKeepAlive {
            try encodeID(.serverKeepAlive, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.authenticationMethod {
            try encodeID(.authenticationMethod, into: &buffer)
            try buffer.writeMQTTString(value, "Authentication Method property")
        }
        if let value = properties.authenticationData {
            try encodeID(.authenticationData, into: &buffer)
            try buffer.writeMQTTBinary(value, "Authentication Data property")
        }
        if let value = properties.requestProblemInformation {
            try encodeID(.requestProblemInformation, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.willDelayInterval {
            try encodeID(.willDelayInterval, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.requestResponseInformation {
            try encodeID(.requestResponseInformation, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.responseInformation {
            try encodeID(.responseInformation, into: &buffer)
            try buffer.writeMQTTString(value, "Response Information property")
        }
        if let value = properties.serverReference {
            try encodeID(.serverReference, into: &buffer)
            try buffer.writeMQTTString(value, "Server Reference property")
        }
        if let value = properties.reasonString {
            try encodeID(.reasonString, into: &buffer)
            try buffer.writeMQTTString(value, "Reason String property")
        }
        if let value = properties.receiveMaximum {
            try encodeID(.receiveMaximum, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.topicAliasMaximum {
            try encodeID(.topicAliasMaximum, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.topicAlias {
            try encodeID(.topicAlias, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.maximumQoS {
            try encodeID(.maximumQoS, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.retainAvailable {
            try encodeID(.retainAvailable, into: &buffer)
            buffer.writeInteger(UInt8(value ? 1 : 0))
        }
        for pair in properties.userProperties {
            try encodeID(.userProperty, into: &buffer)
            try buffer.writeMQTTString(pair.name, "User Property name")
            try buffer.writeMQTTString(pair.value, "User Property value")
        }
        if let value = properties.maximumPacketSize {
            try encodeID(.maximumPacketSize, into: &buffer)
            buffer.writeInteger(value)
        }
        if let value = properties.wildcardSubscriptionAvailable {
            try encodeID(.wildcardSubscriptionAvailable, into: &buffer)
            buffer.writeInteger(UInt8(value ? 1 : 0))
        }
        if let value = properties.subscriptionIdentifiersAvailable {
            try encodeID(.subscriptionIdentifiersAvailable, into: &buffer)
            buffer.writeInteger(UInt8(value ? 1 : 0))
        }
        if let value = properties.sharedSubscriptionAvailable {
            try encodeID(.sharedSubscriptionAvailable, into: &buffer)
            buffer.writeInteger(UInt8(value ? 1 : 0))
        }
    }

    /// Appends a property identifier after checking the property is allowed in the context.
    private func encodeID(_ id: MQTTPropertyID, into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        guard id.isAllowed(in: context) else {
            throw .protocolViolation("\(id.name) property is not allowed in \(context.description)")
        }
        buffer.writeInteger(id.rawValue)
    }
}

extension ByteBuffer {
    /// Appends a property length and `properties` (see ``MQTTPropertiesEncoder``).
    mutating func writeProperties(_ properties: MQTTProperties, _ context: MQTTPropertyContext) throws(MQTTCodecError) {
        try MQTTPropertiesEncoder(properties, context).encode(into: &self)
    }
}
