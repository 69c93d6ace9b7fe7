import NIOCore

/// Encodes packets in the wire form of one protocol version: the fixed header, the remaining
/// length and the body.
///
/// It owns the negotiated version, which decides the layout of nearly every field, and checks
/// what the packet model (``MQTTPacket``) cannot: the rules a packet must keep to be sent. It
/// writes into the caller's buffer rather than one of its own, so encoding allocates nothing
/// beyond that buffer's growth. Errors name no packet yet.
struct MQTTPacketEncoder {
    let version: MQTTVersion

    /// Appends the fixed header, the remaining length and the body of `packet`.
    func encode(_ packet: MQTTPacket, into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        let type = packet.packetType
        var flags = type.fixedFlags
        switch packet {
        case .publish(let publish):
            flags = (publish.dup ? 0b1000 : 0) | publish.qos.rawValue << 1 | (publish.retain ? 0b0001 : 0)
        case .auth where version != .v5:
            throw .protocolViolation("AUTH exists only in MQTT 5")
        default:
            break
        }
        buffer.writeInteger(type.rawValue << 4 | flags)
        try buffer.writeLengthPrefixed("remaining length") { (body: inout ByteBuffer) throws(MQTTCodecError) in
            try encodeBody(of: packet, into: &body)
        }
    }

    /// Appends the variable header and the payload.
    private func encodeBody(of packet: MQTTPacket, into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        switch packet {
        case .connect(let connect):
            try encode(connect, into: &buffer)
        case .connack(let connack):
            guard !connack.sessionPresent || connack.reasonCode == 0 else {
                throw .protocolViolation("session present with the non-zero reason code \(hexByte(connack.reasonCode))")
            }
            buffer.writeInteger(UInt8(connack.sessionPresent ? 1 : 0))
            buffer.writeInteger(connack.reasonCode)
            if version == .v5 { try buffer.writeProperties(connack.properties, .connack) }
        case .publish(let publish):
            try encode(publish, into: &buffer)
        case .puback(let ack), .pubrec(let ack), .pubrel(let ack), .pubcomp(let ack):
            try buffer.writePacketID(ack.packetID)
            try encodeReason(ack.reasonCode, ack.properties, .ack, into: &buffer)
        case .subscribe(let subscribe):
            try encode(subscribe, into: &buffer)
        case .suback(let suback):
            try buffer.writePacketID(suback.packetID)
            guard !suback.reasonCodes.isEmpty else { throw .protocolViolation("SUBACK has no reason codes") }
            if version == .v5 {
                try buffer.writeProperties(suback.properties, .suback)
            } else if let code = suback.reasonCodes.first(where: { !validSubAckReturnCodes.contains($0) }) {
                throw .protocolViolation("return code \(hexByte(code)) is reserved")
            }
            buffer.writeBytes(suback.reasonCodes)
        case .unsubscribe(let unsubscribe):
            try buffer.writePacketID(unsubscribe.packetID)
            guard !unsubscribe.topicFilters.isEmpty else { throw .protocolViolation("UNSUBSCRIBE has no topic filters") }
            if version == .v5 { try buffer.writeProperties(unsubscribe.properties, .unsubscribe) }
            for filter in unsubscribe.topicFilters {
                try buffer.writeMQTTString(filter, "topic filter")
                if let problem = MQTTTopic.problem(withTopicFilter: filter) { throw .protocolViolation(problem) }
            }
        case .unsuback(let unsuback):
            try buffer.writePacketID(unsuback.packetID)
            if version == .v5 {
                guard !unsuback.reasonCodes.isEmpty else { throw .protocolViolation("UNSUBACK has no reason codes") }
                try buffer.writeProperties(unsuback.properties, .unsuback)
                buffer.writeBytes(unsuback.reasonCodes)
            }
        case .pingreq, .pingresp:
            break
        case .disconnect(let disconnect):
            try encodeReason(disconnect.reasonCode, disconnect.properties, .disconnect, into: &buffer)
        case .auth(let reasonCode, let properties):
            try encodeReason(reasonCode, properties, .auth, into: &buffer)
        }
    }

    private func encode(_ connect: MQTTConnect, into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        if version == .v3_1_1, connect.password != nil, connect.username == nil {
            throw .protocolViolation("MQTT 3.1.1 allows a password only with a user name")
        }
        try buffer.writeMQTTString("MQTT", "protocol name")
        buffer.writeInteger(version.rawValue)
        var flags: UInt8 = connect.cleanStart ? 0x02 : 0
        if let will = connect.will { flags |= 0x04 | will.qos.rawValue << 3 | (will.retain ? 0x20 : 0) }
        if connect.password != nil { flags |= 0x40 }
        if connect.username != nil { flags |= 0x80 }
        buffer.writeInteger(flags)
        buffer.writeInteger(connect.keepAlive)
        if version == .v5 { try buffer.writeProperties(connect.properties, .connect) }
        try buffer.writeMQTTString(connect.clientID, "client identifier")
        if let will = connect.will {
            if version == .v5 { try buffer.writeProperties(will.properties, .will) }
            try buffer.writeMQTTString(will.topic, "will topic")
            if let problem = MQTTTopic.problem(withTopicName: will.topic) {
                throw .protocolViolation("will topic: \(problem)")
            }
            try buffer.writeMQTTBinary(will.payload, "will payload")
        }
        if let username = connect.username { try buffer.writeMQTTString(username, "user name") }
        if let password = connect.password { try buffer.writeMQTTBinary(password, "password") }
    }

    private func encode(_ publish: MQTTPublish, into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        if publish.qos == .atMostOnce {
            guard publish.packetID == nil else { throw .protocolViolation("QoS 0 message has a packet identifier") }
            guard !publish.dup else { throw .protocolViolation("QoS 0 message has the DUP flag set") }
        }
        guard publish.payload.count <= maximumVariableByteInteger else {
            throw .packetTooLarge("payload of \(publish.payload.count) bytes exceeds the largest remaining length")
        }
        try buffer.writeMQTTString(publish.topic, "topic")
        if let problem = publishTopicProblem(publish.topic, publish.properties, version: version) {
            throw .protocolViolation(problem)
        }
        if publish.qos != .atMostOnce {
            guard let packetID = publish.packetID else {
                throw .protocolViolation("QoS \(publish.qos.rawValue) message has no packet identifier")
            }
            try buffer.writePacketID(packetID)
        }
        if version == .v5 { try buffer.writeProperties(publish.properties, .publish) }
        buffer.writeBytes(publish.payload)
    }

    private func encode(_ subscribe: MQTTSubscribe, into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        try buffer.writePacketID(subscribe.packetID)
        guard !subscribe.subscriptions.isEmpty else { throw .protocolViolation("SUBSCRIBE has no topic filters") }
        if version == .v5 { try buffer.writeProperties(subscribe.properties, .subscribe) }
        for subscription in subscribe.subscriptions {
            try buffer.writeMQTTString(subscription.topicFilter, "topic filter")
            if let problem = MQTTTopic.problem(withTopicFilter: subscription.topicFilter) {
                throw .protocolViolation(problem)
            }
            var options = subscription.qos.rawValue
            if version == .v5 {
                guard subscription.retainHandling <= 2 else {
                    throw .protocolViolation("retain handling is \(subscription.retainHandling), not 0, 1 or 2")
                }
                if subscription.noLocal, isSharedFilter(subscription.topicFilter) {
                    throw .protocolViolation("No Local is set on a shared subscription")
                }
                options |= (subscription.noLocal ? 0x04 : 0) | (subscription.retainAsPublished ? 0x08 : 0)
                options |= subscription.retainHandling << 4
            }
            buffer.writeInteger(options)
        }
    }

    /// Appends the MQTT 5 reason code and properties of an acknowledgement, DISCONNECT or AUTH,
    /// leaving out what the defaults imply: nothing for reason 0 without properties, the reason code
    /// alone without properties. Nothing at all for MQTT 3.1.1.
    private func encodeReason(
        _ reasonCode: UInt8, _ properties: MQTTProperties, _ context: MQTTPropertyContext, into buffer: inout ByteBuffer
    ) throws(MQTTCodecError) {
        guard version == .v5 else { return }
        let hasProperties = !properties.isEmpty
        guard reasonCode != 0 || hasProperties else { return }
        buffer.writeInteger(reasonCode)
        if hasProperties { try buffer.writeProperties(properties, context) }
    }
}

extension ByteBuffer {
    /// Appends a packet identifier, which must not be 0.
    fileprivate mutating func writePacketID(_ packetID: UInt16) throws(MQTTCodecError) {
        guard packetID != 0 else { throw .protocolViolation("packet identifier is 0") }
        writeInteger(packetID)
    }
}
