import NIOCore

/// Decodes the body (variable header and payload) of one packet whose fixed header ``MQTTCodec``
/// has checked and whose bytes have all arrived.
///
/// It owns the reader over those bytes and the negotiated version, which decides the layout of
/// nearly every field: the packet model (``MQTTPacket``) knows nothing of the wire, and the
/// framing (``MQTTCodec``) nothing of the packet kinds. Errors name no packet yet.
struct MQTTPacketBodyDecoder {
    private var reader: MQTTReader
    private let version: MQTTVersion

    /// Decodes `body`, the packet's remaining length worth of bytes, as spoken by `version`.
    init(body: ByteBuffer, version: MQTTVersion) {
        reader = MQTTReader(body)
        self.version = version
    }

    /// Decodes a packet of `type`; `flags` is the low nibble of its first byte.
    mutating func decode(_ type: MQTTPacketType, flags: UInt8) throws(MQTTCodecError) -> MQTTPacket {
        switch type {
        case .connect:
            return .connect(try decodeConnect())
        case .connack:
            return .connack(try decodeConnAck())
        case .publish:
            return .publish(try decodePublish(flags: flags))
        case .puback:
            return .puback(try decodeAck())
        case .pubrec:
            return .pubrec(try decodeAck())
        case .pubrel:
            return .pubrel(try decodeAck())
        case .pubcomp:
            return .pubcomp(try decodeAck())
        case .subscribe:
            return .subscribe(try decodeSubscribe())
        case .suback:
            return .suback(try decodeSubAck())
        case .unsubscribe:
            return .unsubscribe(try decodeUnsubscribe())
        case .unsuback:
            return .unsuback(try decodeUnsubAck())
        case .pingreq:
            try reader.expectEnd(after: "fixed header")
            return .pingreq
        case .pingresp:
            try reader.expectEnd(after: "fixed header")
            return .pingresp
        case .disconnect:
            let (reasonCode, properties) = try decodeReason(.disconnect)
            return .disconnect(MQTTDisconnect(reasonCode: reasonCode, properties: properties))
        case .auth:
            let (reasonCode, properties) = try decodeReason(.auth)
            return .auth(reasonCode: reasonCode, properties: properties)
        }
    }

    /// MQTT 3.1.1 has no properties: they are always empty there.
    private mutating func decodeProperties(_ context: MQTTPropertyContext) throws(MQTTCodecError) -> MQTTProperties {
        try version == .v5 ? reader.readProperties(context) : MQTTProperties()
    }

    private mutating func decodeConnect() throws(MQTTCodecError) -> MQTTConnect {
        let protocolName = try reader.readString("protocol name")
        guard protocolName.utf8.elementsEqual("MQTT".utf8) else {
            throw .protocolViolation("protocol name is not MQTT")
        }
        let level = try reader.readByte("protocol level")
        guard level == version.rawValue else {
            throw .protocolViolation("protocol level \(level) is not the \(version.rawValue) of \(version.displayName)")
        }
        let flags = try reader.readByte("connect flags")
        guard flags & 0x01 == 0 else { throw .malformed("reserved connect flag is set") }
        let hasWill = flags & 0x04 != 0
        let willRetain = flags & 0x20 != 0
        guard let willQoS = MQTTQoS(rawValue: (flags >> 3) & 0x03) else { throw .malformed("will QoS is 3") }
        guard hasWill || (willQoS == .atMostOnce && !willRetain) else {
            throw .malformed("will QoS or will retain is set without the will flag")
        }
        let hasUsername = flags & 0x80 != 0
        let hasPassword = flags & 0x40 != 0
        if version == .v3_1_1, hasPassword, !hasUsername {
            throw .protocolViolation("MQTT 3.1.1 allows a password only with a user name")
        }
        let keepAlive = try reader.readUInt16("keep alive")
        let properties = try decodeProperties(.connect)
        let clientID = try reader.readString("client identifier")
        var will: MQTTWill?
        if hasWill {
            let willProperties = try decodeProperties(.will)
            let topic = try reader.readString("will topic")
            if let problem = MQTTTopic.problem(withTopicName: topic) { throw .protocolViolation("will topic: \(problem)") }
            let payload = try reader.readBinary("will payload")
            will = MQTTWill(topic: topic, payload: payload, qos: willQoS, retain: willRetain, properties: willProperties)
        }
        let username = try hasUsername ? reader.readString("user name") : nil
        let password = try hasPassword ? reader.readBinary("password") : nil
        try reader.expectEnd(after: "payload")
        return MQTTConnect(
            clientID: clientID, cleanStart: flags & 0x02 != 0, keepAlive: keepAlive, username: username,
            password: password, will: will, properties: properties)
    }

    private mutating func decodeConnAck() throws(MQTTCodecError) -> MQTTConnAck {
        let flags = try reader.readByte("acknowledge flags")
        guard flags & 0xFE == 0 else { throw .malformed("reserved acknowledge flags are set") }
        let reasonCode = try reader.readByte("reason code")
        let sessionPresent = flags & 0x01 != 0
        guard !sessionPresent || reasonCode == 0 else {
            throw .protocolViolation("session present with the non-zero reason code \(hexByte(reasonCode))")
        }
        let properties = try decodeProperties(.connack)
        try reader.expectEnd(after: version == .v5 ? "properties" : "return code")
        return MQTTConnAck(sessionPresent: sessionPresent, reasonCode: reasonCode, properties: properties)
    }

    private mutating func decodePublish(flags: UInt8) throws(MQTTCodecError) -> MQTTPublish {
        guard let qos = MQTTQoS(rawValue: (flags >> 1) & 0x03) else { throw .malformed("QoS is 3") }
        let dup = flags & 0b1000 != 0
        guard qos != .atMostOnce || !dup else { throw .protocolViolation("QoS 0 message has the DUP flag set") }
        let topic = try reader.readString("topic")
        let packetID = try qos == .atMostOnce ? nil : reader.readPacketID()
        let properties = try decodeProperties(.publish)
        if let problem = publishTopicProblem(topic, properties, version: version) { throw .protocolViolation(problem) }
        return MQTTPublish(
            topic: topic, payload: reader.readRest(), qos: qos, retain: flags & 0b0001 != 0, dup: dup,
            packetID: packetID, properties: properties)
    }

    private mutating func decodeAck() throws(MQTTCodecError) -> MQTTAck {
        let packetID = try reader.readPacketID()
        let (reasonCode, properties) = try decodeReason(.ack)
        return MQTTAck(packetID: packetID, reasonCode: reasonCode, properties: properties)
    }

    /// Decodes the optional MQTT 5 reason code and properties at the end of an acknowledgement,
    /// DISCONNECT or AUTH: absent means reason 0 and no properties. MQTT 3.1.1 packets end before them.
    private mutating func decodeReason(_ context: MQTTPropertyContext) throws(MQTTCodecError) -> (UInt8, MQTTProperties) {
        var reasonCode: UInt8 = 0
        var properties = MQTTProperties()
        if version == .v5, !reader.isAtEnd {
            reasonCode = try reader.readByte("reason code")
            if !reader.isAtEnd { properties = try reader.readProperties(context) }
        }
        try reader.expectEnd(after: version == .v5 ? "properties" : "variable header")
        return (reasonCode, properties)
    }

    private mutating func decodeSubscribe() throws(MQTTCodecError) -> MQTTSubscribe {
        let packetID = try reader.readPacketID()
        let properties = try decodeProperties(.subscribe)
        var subscriptions: [MQTTSubscription] = []
        while !reader.isAtEnd {
            let filter = try reader.readString("topic filter")
            if let problem = MQTTTopic.problem(withTopicFilter: filter) { throw .protocolViolation(problem) }
            let options = try reader.readByte("subscription options")
            let reservedMask: UInt8 = version == .v5 ? 0xC0 : 0xFC
            guard options & reservedMask == 0 else { throw .malformed("reserved subscription option bits are set") }
            guard let qos = MQTTQoS(rawValue: options & 0x03) else { throw .malformed("subscription QoS is 3") }
            var subscription = MQTTSubscription(topicFilter: filter, qos: qos)
            if version == .v5 {
                subscription.noLocal = options & 0x04 != 0
                subscription.retainAsPublished = options & 0x08 != 0
                subscription.retainHandling = (options >> 4) & 0x03
                guard subscription.retainHandling != 3 else { throw .protocolViolation("retain handling is 3") }
                if subscription.noLocal, isSharedFilter(filter) {
                    throw .protocolViolation("No Local is set on a shared subscription")
                }
            }
            subscriptions.append(subscription)
        }
        guard !subscriptions.isEmpty else { throw .protocolViolation("SUBSCRIBE has no topic filters") }
        return MQTTSubscribe(packetID: packetID, subscriptions: subscriptions, properties: properties)
    }

    private mutating func decodeSubAck() throws(MQTTCodecError) -> MQTTSubAck {
        let packetID = try reader.readPacketID()
        let properties = try decodeProperties(.suback)
        let reasonCodes = reader.readRest()
        guard !reasonCodes.isEmpty else { throw .protocolViolation("SUBACK has no reason codes") }
        if version == .v3_1_1, let code = reasonCodes.first(where: { !validSubAckReturnCodes.contains($0) }) {
            throw .protocolViolation("return code \(hexByte(code)) is reserved")
        }
        return MQTTSubAck(packetID: packetID, reasonCodes: reasonCodes, properties: properties)
    }

    private mutating func decodeUnsubscribe() throws(MQTTCodecError) -> MQTTUnsubscribe {
        let packetID = try reader.readPacketID()
        let properties = try decodeProperties(.unsubscribe)
        var filters: [String] = []
        while !reader.isAtEnd {
            let filter = try reader.readString("topic filter")
            if let problem = MQTTTopic.problem(withTopicFilter: filter) { throw .protocolViolation(problem) }
            filters.append(filter)
        }
        guard !filters.isEmpty else { throw .protocolViolation("UNSUBSCRIBE has no topic filters") }
        return MQTTUnsubscribe(packetID: packetID, topicFilters: filters, properties: properties)
    }

    private mutating func decodeUnsubAck() throws(MQTTCodecError) -> MQTTUnsubAck {
        let packetID = try reader.readPacketID()
        guard version == .v5 else {
            try reader.expectEnd(after: "packet identifier")
            return MQTTUnsubAck(packetID: packetID)
        }
        let properties = try reader.readProperties(.unsuback)
        let reasonCodes = reader.readRest()
        guard !reasonCodes.isEmpty else { throw .protocolViolation("UNSUBACK has no reason codes") }
        return MQTTUnsubAck(packetID: packetID, reasonCodes: reasonCodes, properties: properties)
    }
}
