import MQTTCodec
import Testing

/// Byte vectors written out by hand from the specifications' packet layouts, checked both ways.
@Suite struct MQTTCodecVectorTests {
    private func expectBothWays(
        _ packet: MQTTPacket, _ bytes: [UInt8], _ version: MQTTVersion, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(try encoded(packet, version) == bytes, sourceLocation: sourceLocation)
        #expect(try decodedWhole(bytes, version) == packet, sourceLocation: sourceLocation)
    }

    @Test func connect311WithUsernameAndPassword() throws {
        let packet = MQTTPacket.connect(
            MQTTConnect(clientID: "abc", cleanStart: true, keepAlive: 60, username: "u", password: ascii("p")))
        let bytes: [UInt8] =
            [0x10, 21]  // CONNECT, remaining length 21
            + [0x00, 0x04] + ascii("MQTT") + [0x04]  // protocol name, level 4
            + [0xC2]  // user name, password, clean session
            + [0x00, 0x3C]  // keep alive 60
            + [0x00, 0x03] + ascii("abc")  // client identifier
            + [0x00, 0x01] + ascii("u")  // user name
            + [0x00, 0x01] + ascii("p")  // password
        try expectBothWays(packet, bytes, .v3_1_1)
    }

    @Test func connect311WithWill() throws {
        let will = MQTTWill(topic: "w/t", payload: ascii("bye"), qos: .atLeastOnce, retain: true)
        let packet = MQTTPacket.connect(MQTTConnect(clientID: "c1", cleanStart: false, keepAlive: 10, will: will))
        let bytes: [UInt8] =
            [0x10, 24]
            + [0x00, 0x04] + ascii("MQTT") + [0x04]
            + [0x2C]  // will retain, will QoS 1, will flag
            + [0x00, 0x0A]
            + [0x00, 0x02] + ascii("c1")
            + [0x00, 0x03] + ascii("w/t")  // will topic
            + [0x00, 0x03] + ascii("bye")  // will payload
        try expectBothWays(packet, bytes, .v3_1_1)
    }

    @Test func connect5WithPropertiesAndWill() throws {
        var properties = MQTTProperties()
        properties.sessionExpiryInterval = 120
        properties.receiveMaximum = 10
        var willProperties = MQTTProperties()
        willProperties.willDelayInterval = 5
        let will = MQTTWill(topic: "t", payload: [0x01], qos: .atMostOnce, retain: false, properties: willProperties)
        let packet = MQTTPacket.connect(
            MQTTConnect(clientID: "cid", cleanStart: true, keepAlive: 30, will: will, properties: properties))
        let bytes: [UInt8] =
            [0x10, 36]
            + [0x00, 0x04] + ascii("MQTT") + [0x05]  // protocol name, level 5
            + [0x06]  // will flag, clean start
            + [0x00, 0x1E]  // keep alive 30
            + [0x08]  // property length
            + [0x11, 0x00, 0x00, 0x00, 0x78]  // Session Expiry Interval 120
            + [0x21, 0x00, 0x0A]  // Receive Maximum 10
            + [0x00, 0x03] + ascii("cid")
            + [0x05, 0x18, 0x00, 0x00, 0x00, 0x05]  // will properties: Will Delay Interval 5
            + [0x00, 0x01] + ascii("t")
            + [0x00, 0x01, 0x01]
        try expectBothWays(packet, bytes, .v5)
    }

    @Test func publish5QoS1WithProperties() throws {
        var properties = MQTTProperties()
        properties.payloadFormatIndicator = 1
        properties.messageExpiryInterval = 60
        properties.userProperties = [MQTTUserProperty(name: "k", value: "v")]
        let packet = MQTTPacket.publish(
            MQTTPublish(
                topic: "a/b", payload: ascii("hi"), qos: .atLeastOnce, retain: true, packetID: 10,
                properties: properties))
        let bytes: [UInt8] =
            [0x33, 24]  // PUBLISH, QoS 1, retain
            + [0x00, 0x03] + ascii("a/b")
            + [0x00, 0x0A]  // packet identifier 10
            + [0x0E]  // property length 14
            + [0x01, 0x01]  // Payload Format Indicator 1
            + [0x02, 0x00, 0x00, 0x00, 0x3C]  // Message Expiry Interval 60
            + [0x26, 0x00, 0x01] + ascii("k") + [0x00, 0x01] + ascii("v")  // User Property
            + ascii("hi")
        try expectBothWays(packet, bytes, .v5)
    }

    @Test func publish311QoS2Dup() throws {
        let packet = MQTTPacket.publish(
            MQTTPublish(topic: "x", payload: [0xFF], qos: .exactlyOnce, dup: true, packetID: 0x1234))
        try expectBothWays(packet, [0x3C, 0x06, 0x00, 0x01] + ascii("x") + [0x12, 0x34, 0xFF], .v3_1_1)
    }

    @Test func suback311() throws {
        let packet = MQTTPacket.suback(MQTTSubAck(packetID: 1, reasonCodes: [0x01, 0x80]))
        try expectBothWays(packet, [0x90, 0x04, 0x00, 0x01, 0x01, 0x80], .v3_1_1)
    }

    @Test func suback5WithReasonString() throws {
        var properties = MQTTProperties()
        properties.reasonString = "ok"
        let packet = MQTTPacket.suback(MQTTSubAck(packetID: 1, reasonCodes: [0x01, 0x80], properties: properties))
        let bytes: [UInt8] = [0x90, 0x0A, 0x00, 0x01, 0x05, 0x1F, 0x00, 0x02] + ascii("ok") + [0x01, 0x80]
        try expectBothWays(packet, bytes, .v5)
    }

    @Test func subscribe5Options() throws {
        let packet = MQTTPacket.subscribe(
            MQTTSubscribe(
                packetID: 2,
                subscriptions: [
                    MQTTSubscription(
                        topicFilter: "a/#", qos: .atLeastOnce, noLocal: true, retainAsPublished: true, retainHandling: 2)
                ]))
        // Options: retain handling 2 (0x20), retain as published (0x08), no local (0x04), QoS 1.
        try expectBothWays(packet, [0x82, 0x09, 0x00, 0x02, 0x00, 0x00, 0x03] + ascii("a/#") + [0x2D], .v5)
    }

    @Test func connack() throws {
        try expectBothWays(.connack(MQTTConnAck(sessionPresent: true)), [0x20, 0x02, 0x01, 0x00], .v3_1_1)
        try expectBothWays(.connack(MQTTConnAck(reasonCode: 0x04)), [0x20, 0x02, 0x00, 0x04], .v3_1_1)
        try expectBothWays(.connack(MQTTConnAck(reasonCode: 0x86)), [0x20, 0x03, 0x00, 0x86, 0x00], .v5)
    }

    @Test func shortMQTT5AcknowledgementForms() throws {
        // Remaining length 2: reason code 0, no properties.
        try expectBothWays(.puback(MQTTAck(packetID: 5)), [0x40, 0x02, 0x00, 0x05], .v5)
        try expectBothWays(.pubrel(MQTTAck(packetID: 5)), [0x62, 0x02, 0x00, 0x05], .v5)
        // Remaining length 3: a reason code, no properties.
        try expectBothWays(.pubrec(MQTTAck(packetID: 5, reasonCode: 0x10)), [0x50, 0x03, 0x00, 0x05, 0x10], .v5)
        // A zero reason code and an empty property list decode like the short form.
        #expect(try decodedWhole([0x70, 0x04, 0x00, 0x05, 0x00, 0x00], .v5) == .pubcomp(MQTTAck(packetID: 5)))
        #expect(try decodedWhole([0x70, 0x03, 0x00, 0x05, 0x00], .v5) == .pubcomp(MQTTAck(packetID: 5)))
    }

    @Test func disconnectAndAuthForms() throws {
        try expectBothWays(.disconnect(MQTTDisconnect()), [0xE0, 0x00], .v5)
        try expectBothWays(.disconnect(MQTTDisconnect()), [0xE0, 0x00], .v3_1_1)
        try expectBothWays(.disconnect(MQTTDisconnect(reasonCode: 0x8E)), [0xE0, 0x01, 0x8E], .v5)
        #expect(try decodedWhole([0xE0, 0x02, 0x00, 0x00], .v5) == .disconnect(MQTTDisconnect()))
        try expectBothWays(.auth(reasonCode: 0, properties: .init()), [0xF0, 0x00], .v5)
        try expectBothWays(.auth(reasonCode: 0x18, properties: .init()), [0xF0, 0x01, 0x18], .v5)
    }

    @Test func unsubscribeAndUnsuback() throws {
        try expectBothWays(
            .unsubscribe(MQTTUnsubscribe(packetID: 3, topicFilters: ["a"])), [0xA2, 0x05, 0x00, 0x03, 0x00, 0x01, 0x61],
            .v3_1_1)
        try expectBothWays(.unsuback(MQTTUnsubAck(packetID: 3)), [0xB0, 0x02, 0x00, 0x03], .v3_1_1)
        try expectBothWays(
            .unsuback(MQTTUnsubAck(packetID: 3, reasonCodes: [0x11])), [0xB0, 0x04, 0x00, 0x03, 0x00, 0x11], .v5)
    }

    @Test func pings() throws {
        try expectBothWays(.pingreq, [0xC0, 0x00], .v3_1_1)
        try expectBothWays(.pingresp, [0xD0, 0x00], .v5)
    }
}
