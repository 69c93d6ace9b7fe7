extension MQTTPacket {
    /// Reads the body of a packet of `type` whose fixed header has been checked. Errors name no packet yet.
    static func read(
        _ type: MQTTPacketType, flags: UInt8, from reader: inout MQTTReader, version: MQTTVersion
    ) throws(MQTTCodecError) -> MQTTPacket {
        switch type {
        case .connect:
            return .connect(try readConnect(from: &reader, version: version))
        case .connack:
            return .connack(try readConnAck(from: &reader, version: version))
        case .publish:
            return .publish(try readPublish(flags: flags, from: &reader, version: version))
        case .puback:
            return .puback(try readAck(from: &reader, version: version))
        case .pubrec:
            return .pubrec(try readAck(from: &reader, version: version))
        case .pubrel:
            return .pubrel(try readAck(from: &reader, version: version))
        case .pubcomp:
            return .pubcomp(try readAck(from: &reader, version: version))
        case .subscribe:
            return .subscribe(try readSubscribe(from: &reader, version: version))
        case .suback:
            return .suback(try readSubAck(from: &reader, version: version))
        case .unsubscribe:
            return .unsubscribe(try readUnsubscribe(from: &reader, version: version))
        case .unsuback:
            return .unsuback(try readUnsubAck(from: &reader, version: version))
        case .pingreq:
            try reader.expectEnd(after: "fixed header")
            return .pingreq
        case .pingresp:
            try reader.expectEnd(after: "fixed header")
            return .pingresp
        case .disconnect:
            let (reasonCode, properties) = try readReason(from: &reader, .disconnect, version: version)
            return .disconnect(MQTTDisconnect(reasonCode: reasonCode, properties: properties))
        case .auth:
            let (reasonCode, properties) = try readReason(from: &reader, .auth, version: version)
            return .auth(reasonCode: reasonCode, properties: properties)
        }
    }

    private static func readConnect(from reader: inout MQTTReader, version: MQTTVersion) throws(MQTTCodecError)
        -> MQTTConnect
    {
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
        let properties = try version == .v5 ? reader.readProperties(.connect) : MQTTProperties()
        let clientID = try reader.readString("client identifier")
        var will: MQTTWill?
        if hasWill {
            let willProperties = try version == .v5 ? reader.readProperties(.will) : MQTTProperties()
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

    private static func readConnAck(from reader: inout MQTTReader, version: MQTTVersion) throws(MQTTCodecError)
        -> MQTTConnAck
    {
        let flags = try reader.readByte("acknowledge flags")
        guard flags & 0xFE == 0 else { throw .malformed("reserved acknowledge flags are set") }
        let reasonCode = try reader.readByte("reason code")
        let sessionPresent = flags & 0x01 != 0
        guard !sessionPresent || reasonCode == 0 else {
            throw .protocolViolation("session present with the non-zero reason code \(hexByte(reasonCode))")
        }
        let properties = try version == .v5 ? reader.readProperties(.connack) : MQTTProperties()
        try reader.expectEnd(after: version == .v5 ? "properties" : "return code")
        return MQTTConnAck(sessionPresent: sessionPresent, reasonCode: reasonCode, properties: properties)
    }

    private static func readPublish(flags: UInt8, from reader: inout MQTTReader, version: MQTTVersion)
        throws(MQTTCodecError) -> MQTTPublish
    {
        guard let qos = MQTTQoS(rawValue: (flags >> 1) & 0x03) else { throw .malformed("QoS is 3") }
        let dup = flags & 0b1000 != 0
        guard qos != .atMostOnce || !dup else { throw .protocolViolation("QoS 0 message has the DUP flag set") }
        let topic = try reader.readString("topic")
        let packetID = try qos == .atMostOnce ? nil : reader.readPacketID()
        let properties = try version == .v5 ? reader.readProperties(.publish) : MQTTProperties()
        if let problem = publishTopicProblem(topic, properties, version: version) { throw .protocolViolation(problem) }
        return MQTTPublish(
            topic: topic, payload: reader.readRest(), qos: qos, retain: flags & 0b0001 != 0, dup: dup,
            packetID: packetID, properties: properties)
    }

    private static func readAck(from reader: inout MQTTReader, version: MQTTVersion) throws(MQTTCodecError) -> MQTTAck {
        let packetID = try reader.readPacketID()
        let (reasonCode, properties) = try readReason(from: &reader, .ack, version: version)
        return MQTTAck(packetID: packetID, reasonCode: reasonCode, properties: properties)
    }

    /// Reads the optional MQTT 5 reason code and properties at the end of an acknowledgement, DISCONNECT or
    /// AUTH: absent means reason 0 and no properties. MQTT 3.1.1 packets end before them.
    private static func readReason(
        from reader: inout MQTTReader, _ context: MQTTPropertyContext, version: MQTTVersion
    ) throws(MQTTCodecError) -> (UInt8, MQTTProperties) {
        var reasonCode: UInt8 = 0
        var properties = MQTTProperties()
        if version == .v5, !reader.isAtEnd {
            reasonCode = try reader.readByte("reason code")
            if !reader.isAtEnd { properties = try reader.readProperties(context) }
        }
        try reader.expectEnd(after: version == .v5 ? "properties" : "variable header")
        return (reasonCode, properties)
    }

    private static func readSubscribe(from reader: inout MQTTReader, version: MQTTVersion) throws(MQTTCodecError)
        -> MQTTSubscribe
    {
        let packetID = try reader.readPacketID()
        let properties = try version == .v5 ? reader.readProperties(.subscribe) : MQTTProperties()
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

    private static func readSubAck(from reader: inout MQTTReader, version: MQTTVersion) throws(MQTTCodecError)
        -> MQTTSubAck
    {
        let packetID = try reader.readPacketID()
        let properties = try version == .v5 ? reader.readProperties(.suback) : MQTTProperties()
        let reasonCodes = reader.readRest()
        guard !reasonCodes.isEmpty else { throw .protocolViolation("SUBACK has no reason codes") }
        if version == .v3_1_1, let code = reasonCodes.first(where: { !validSubAckReturnCodes.contains($0) }) {
            throw .protocolViolation("return code \(hexByte(code)) is reserved")
        }
        return MQTTSubAck(packetID: packetID, reasonCodes: reasonCodes, properties: properties)
    }

    private static func readUnsubscribe(from reader: inout MQTTReader, version: MQTTVersion) throws(MQTTCodecError)
        -> MQTTUnsubscribe
    {
        let packetID = try reader.readPacketID()
        let properties = try version == .v5 ? reader.readProperties(.unsubscribe) : MQTTProperties()
        var filters: [String] = []
        while !reader.isAtEnd {
            let filter = try reader.readString("topic filter")
            if let problem = MQTTTopic.problem(withTopicFilter: filter) { throw .protocolViolation(problem) }
            filters.append(filter)
        }
        guard !filters.isEmpty else { throw .protocolViolation("UNSUBSCRIBE has no topic filters") }
        return MQTTUnsubscribe(packetID: packetID, topicFilters: filters, properties: properties)
    }

    private static func readUnsubAck(from reader: inout MQTTReader, version: MQTTVersion) throws(MQTTCodecError)
        -> MQTTUnsubAck
    {
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
