import MQTTCodec
import NIOCore
import Testing

/// Input that must be refused, each with the right kind of error and packet name.
@Suite struct MQTTCodecMalformedTests {
    @Test func remainingLengthOfFiveBytes() {
        expectDecodingError([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], .v5, .malformed, "PUBLISH", reasonContains: "4 bytes")
        // Refused on the fourth continuation byte, without waiting for a fifth.
        expectDecodingError([0xD0, 0x80, 0x80, 0x80, 0x80], .v3_1_1, .malformed, "PINGRESP")
    }

    @Test func variableByteIntegerInsidePropertiesOfFiveBytes() {
        // PUBLISH whose property length is a five-byte variable byte integer.
        expectDecodingError(
            packet(0x30, [0x00, 0x01] + ascii("t") + [0xFF, 0xFF, 0xFF, 0xFF, 0x01]), .v5, .malformed, "PUBLISH")
        // A Subscription Identifier of five bytes.
        expectDecodingError(
            packet(0x30, [0x00, 0x01] + ascii("t") + [0x06, 0x0B, 0x80, 0x80, 0x80, 0x80, 0x01]), .v5, .malformed,
            "PUBLISH")
    }

    @Test func reservedFlagBits() {
        expectDecodingError([0x60, 0x02, 0x00, 0x01], .v5, .malformed, "PUBREL", reasonContains: "0b0010")
        expectDecodingError([0x80, 0x06, 0x00, 0x01, 0x00, 0x01, 0x61, 0x00], .v3_1_1, .malformed, "SUBSCRIBE")
        expectDecodingError([0xA0, 0x05, 0x00, 0x01, 0x00, 0x01, 0x61], .v3_1_1, .malformed, "UNSUBSCRIBE")
        expectDecodingError([0x41, 0x02, 0x00, 0x01], .v3_1_1, .malformed, "PUBACK")
        expectDecodingError([0x22, 0x02, 0x00, 0x00], .v3_1_1, .malformed, "CONNACK")
        expectDecodingError([0xC8, 0x00], .v5, .malformed, "PINGREQ")
        expectDecodingError([0xE1, 0x00], .v5, .malformed, "DISCONNECT")
        // Flags are checked as soon as the first byte arrives.
        expectDecodingError([0x63], .v5, .malformed, "PUBREL")
    }

    @Test func reservedPacketTypes() {
        expectDecodingError([0x00, 0x00], .v5, .malformed, "unknown(0x00)")
        expectDecodingError([0xF0, 0x00], .v3_1_1, .malformed, "unknown(0xF0)")
    }

    @Test func publishQoS3() {
        expectDecodingError([0x36, 0x05, 0x00, 0x01, 0x61, 0x00, 0x01], .v3_1_1, .malformed, "PUBLISH", reasonContains: "QoS")
        expectDecodingError([0x36], .v5, .malformed, "PUBLISH")
    }

    @Test(
        arguments: [
            [0x61, 0xFF, 0x62],  // 0xFF never occurs in UTF-8
            [0xC0, 0x80],  // overlong NUL
            [0xED, 0xA0, 0x80],  // UTF-16 surrogate
            [0xE2, 0x82],  // truncated sequence
            [0x80],  // lone continuation byte
        ] as [[UInt8]])
    func invalidUTF8Topic(topic: [UInt8]) {
        let body: [UInt8] = [0x00, UInt8(topic.count)] + topic
        expectDecodingError([0x30, UInt8(body.count)] + body, .v3_1_1, .malformed, "PUBLISH", reasonContains: "topic is not valid UTF-8")
        expectDecodingError([0x30, UInt8(body.count + 1)] + body + [0x00], .v5, .malformed, "PUBLISH", reasonContains: "UTF-8")
    }

    @Test func nulInStrings() {
        expectDecodingError([0x30, 0x05, 0x00, 0x03, 0x61, 0x00, 0x62], .v3_1_1, .malformed, "PUBLISH", reasonContains: "U+0000")
        // A user property value with U+0000 in a v5 PUBACK.
        let property: [UInt8] = [0x26, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x00]
        expectDecodingError(
            [0x40, UInt8(4 + property.count), 0x00, 0x01, 0x00, UInt8(property.count)] + property, .v5, .malformed,
            "PUBACK", reasonContains: "U+0000")
    }

    @Test func truncatedProperties() {
        // Reason String claims 5 bytes, 1 is there.
        expectDecodingError(
            [0x40, 0x08, 0x00, 0x01, 0x00, 0x04, 0x1F, 0x00, 0x05, 0x61], .v5, .malformed, "PUBACK", reasonContains: "truncated")
        // Message Expiry Interval with 2 of its 4 bytes.
        expectDecodingError(
            [0x30, 0x07, 0x00, 0x01] + ascii("t") + [0x03, 0x02, 0x00, 0x00], .v5, .malformed, "PUBLISH",
            reasonContains: "truncated")
        // Property length beyond the end of the packet.
        expectDecodingError([0x40, 0x05, 0x00, 0x01, 0x00, 0x09, 0x1F], .v5, .malformed, "PUBACK")
        // A property identifier with no value.
        expectDecodingError([0xE0, 0x03, 0x00, 0x01, 0x11], .v5, .malformed, "DISCONNECT")
    }

    @Test func duplicateProperties() {
        // Payload Format Indicator twice.
        expectDecodingError(
            packet(0x30, [0x00, 0x01] + ascii("t") + [0x04, 0x01, 0x01, 0x01, 0x00]), .v5, .protocolViolation, "PUBLISH",
            reasonContains: "more than once")
        // Subscription Identifier twice is fine in PUBLISH but not in SUBSCRIBE.
        expectDecodingError(
            [0x82, 0x0B, 0x00, 0x01, 0x04, 0x0B, 0x01, 0x0B, 0x02, 0x00, 0x01] + ascii("a") + [0x00], .v5,
            .protocolViolation, "SUBSCRIBE")
        let publish: [UInt8] = [0x30, 0x08, 0x00, 0x01] + ascii("t") + [0x04, 0x0B, 0x01, 0x0B, 0x02]
        #expect(throws: Never.self) { _ = try decodedWhole(publish, .v5) }
        // User Property may repeat.
        let users: [UInt8] = [0x26, 0x00, 0x01, 0x61, 0x00, 0x00, 0x26, 0x00, 0x01, 0x61, 0x00, 0x00]
        #expect(throws: Never.self) {
            _ = try decodedWhole([0x40, UInt8(4 + users.count), 0x00, 0x01, 0x00, UInt8(users.count)] + users, .v5)
        }
    }

    @Test func unknownAndMisplacedProperties() {
        expectDecodingError(
            packet(0x30, [0x00, 0x01] + ascii("t") + [0x02, 0x04, 0x00]), .v5, .malformed, "PUBLISH",
            reasonContains: "unknown property identifier 0x4")
        // A two-byte property identifier.
        expectDecodingError(
            packet(0x30, [0x00, 0x01] + ascii("t") + [0x03, 0x81, 0x01, 0x00]), .v5, .malformed, "PUBLISH",
            reasonContains: "unknown property")
        // Topic Alias is a PUBLISH property, not a PUBACK one.
        expectDecodingError(
            [0x40, 0x07, 0x00, 0x01, 0x00, 0x03, 0x23, 0x00, 0x01], .v5, .malformed, "PUBACK", reasonContains: "Topic Alias")
        // Will Delay Interval belongs in the will properties, not the CONNECT properties.
        let connect: [UInt8] =
            packet(0x10, [0x00, 0x04] + ascii("MQTT") + [0x05, 0x02, 0x00, 0x00, 0x05, 0x18, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])
        expectDecodingError(connect, .v5, .malformed, "CONNECT", reasonContains: "Will Delay Interval")
    }

    @Test func invalidPropertyValues() {
        // Topic Alias 0.
        expectDecodingError(
            packet(0x30, [0x00, 0x01] + ascii("t") + [0x03, 0x23, 0x00, 0x00]), .v5, .protocolViolation, "PUBLISH")
        // Payload Format Indicator 2.
        expectDecodingError(
            packet(0x30, [0x00, 0x01] + ascii("t") + [0x02, 0x01, 0x02]), .v5, .protocolViolation, "PUBLISH")
        // Retain Available 2.
        expectDecodingError([0x20, 0x05, 0x00, 0x00, 0x02, 0x25, 0x02], .v5, .protocolViolation, "CONNACK")
        // Receive Maximum 0.
        expectDecodingError([0x20, 0x06, 0x00, 0x00, 0x03, 0x21, 0x00, 0x00], .v5, .protocolViolation, "CONNACK")
        // Subscription Identifier 0.
        expectDecodingError(
            packet(0x30, [0x00, 0x01] + ascii("t") + [0x02, 0x0B, 0x00]), .v5, .protocolViolation, "PUBLISH")
    }

    @Test func publishRules() {
        // Packet identifier 0.
        expectDecodingError([0x32, 0x05, 0x00, 0x01] + ascii("t") + [0x00, 0x00], .v3_1_1, .protocolViolation, "PUBLISH")
        // QoS 1 without room for the packet identifier.
        expectDecodingError([0x32, 0x04, 0x00, 0x01] + ascii("t") + [0x00], .v3_1_1, .malformed, "PUBLISH")
        // DUP on QoS 0.
        expectDecodingError([0x38, 0x03, 0x00, 0x01] + ascii("t"), .v3_1_1, .protocolViolation, "PUBLISH")
        // Wildcards in a topic name.
        expectDecodingError([0x30, 0x05, 0x00, 0x03] + ascii("a/+"), .v3_1_1, .protocolViolation, "PUBLISH")
        expectDecodingError([0x30, 0x04, 0x00, 0x01] + ascii("#") + [0x00], .v5, .protocolViolation, "PUBLISH")
        // Empty topic: only with a Topic Alias in MQTT 5.
        expectDecodingError([0x30, 0x02, 0x00, 0x00], .v3_1_1, .protocolViolation, "PUBLISH")
        expectDecodingError([0x30, 0x03, 0x00, 0x00, 0x00], .v5, .protocolViolation, "PUBLISH")
        // Topic length beyond the packet.
        expectDecodingError([0x30, 0x03, 0x00, 0x05, 0x61], .v3_1_1, .malformed, "PUBLISH", reasonContains: "truncated")
        // MQTT 5 PUBLISH without its property length.
        expectDecodingError([0x30, 0x03, 0x00, 0x01] + ascii("t"), .v5, .malformed, "PUBLISH")
    }

    @Test func connectRules() {
        func connect(level: UInt8, flags: UInt8, rest: [UInt8]) -> [UInt8] {
            let body = [0x00, 0x04] + ascii("MQTT") + [level, flags, 0x00, 0x00] + rest
            return [0x10, UInt8(body.count)] + body
        }
        let clientID: [UInt8] = [0x00, 0x01, 0x63]
        #expect(throws: Never.self) { _ = try decodedWhole(connect(level: 4, flags: 0x02, rest: clientID), .v3_1_1) }
        expectDecodingError(connect(level: 4, flags: 0x03, rest: clientID), .v3_1_1, .malformed, "CONNECT")
        expectDecodingError(connect(level: 4, flags: 0x1C, rest: clientID), .v3_1_1, .malformed, "CONNECT", reasonContains: "QoS")
        expectDecodingError(connect(level: 4, flags: 0x08, rest: clientID), .v3_1_1, .malformed, "CONNECT")
        expectDecodingError(connect(level: 4, flags: 0x20, rest: clientID), .v3_1_1, .malformed, "CONNECT")
        expectDecodingError(
            connect(level: 4, flags: 0x40, rest: clientID + [0x00, 0x00]), .v3_1_1, .protocolViolation, "CONNECT")
        expectDecodingError(connect(level: 5, flags: 0x02, rest: clientID), .v3_1_1, .protocolViolation, "CONNECT")
        expectDecodingError(connect(level: 4, flags: 0x02, rest: clientID + [0x00]), .v3_1_1, .malformed, "CONNECT")
        var wrongName: [UInt8] = connect(level: 4, flags: 0x02, rest: clientID)
        wrongName[5] = UInt8(ascii: "X")
        expectDecodingError(wrongName, .v3_1_1, .protocolViolation, "CONNECT")
        // MQTT 5 allows a password without a user name.
        #expect(throws: Never.self) {
            _ = try decodedWhole(connect(level: 5, flags: 0x40, rest: [0x00] + clientID + [0x00, 0x00]), .v5)
        }
    }

    @Test func acknowledgementRules() {
        expectDecodingError([0x40, 0x03, 0x00, 0x01, 0x00], .v3_1_1, .malformed, "PUBACK")
        expectDecodingError([0x40, 0x01, 0x00], .v5, .malformed, "PUBACK")
        expectDecodingError([0x40, 0x02, 0x00, 0x00], .v5, .protocolViolation, "PUBACK")
        expectDecodingError([0x20, 0x03, 0x00, 0x00, 0x00], .v3_1_1, .malformed, "CONNACK")
        expectDecodingError([0x20, 0x02, 0x00, 0x00], .v5, .malformed, "CONNACK")
        expectDecodingError([0x20, 0x02, 0x02, 0x00], .v3_1_1, .malformed, "CONNACK")
        expectDecodingError([0x20, 0x02, 0x01, 0x05], .v3_1_1, .protocolViolation, "CONNACK")
        expectDecodingError([0x90, 0x02, 0x00, 0x01], .v3_1_1, .protocolViolation, "SUBACK")
        expectDecodingError([0x90, 0x03, 0x00, 0x01, 0x03], .v3_1_1, .protocolViolation, "SUBACK")
        expectDecodingError([0x90, 0x03, 0x00, 0x01, 0x00], .v5, .protocolViolation, "SUBACK")
        expectDecodingError([0xB0, 0x03, 0x00, 0x01, 0x00], .v3_1_1, .malformed, "UNSUBACK")
        expectDecodingError([0xB0, 0x03, 0x00, 0x01, 0x00], .v5, .protocolViolation, "UNSUBACK")
        expectDecodingError([0xD0, 0x01, 0x00], .v5, .malformed, "PINGRESP")
        expectDecodingError([0xE0, 0x01, 0x00], .v3_1_1, .malformed, "DISCONNECT")
    }

    @Test func subscribeRules() {
        func subscribe(_ payload: [UInt8], _ version: MQTTVersion) -> [UInt8] {
            let body: [UInt8] = [0x00, 0x01] + (version == .v5 ? [0x00] : []) + payload
            return [0x82, UInt8(body.count)] + body
        }
        let filter: [UInt8] = [0x00, 0x01, 0x61]
        expectDecodingError(subscribe([], .v3_1_1), .v3_1_1, .protocolViolation, "SUBSCRIBE")
        expectDecodingError(subscribe(filter + [0x03], .v5), .v5, .malformed, "SUBSCRIBE")
        expectDecodingError(subscribe(filter + [0x04], .v3_1_1), .v3_1_1, .malformed, "SUBSCRIBE")
        expectDecodingError(subscribe(filter + [0x40], .v5), .v5, .malformed, "SUBSCRIBE")
        expectDecodingError(subscribe(filter + [0x30], .v5), .v5, .protocolViolation, "SUBSCRIBE")
        expectDecodingError(subscribe(filter, .v5), .v5, .malformed, "SUBSCRIBE")
        expectDecodingError(subscribe([0x00, 0x03] + ascii("a#b") + [0x00], .v5), .v5, .protocolViolation, "SUBSCRIBE")
        let shared = [0x00, 0x09] + ascii("$share/g/") + [0x04]
        expectDecodingError(subscribe(shared, .v5), .v5, .protocolViolation, "SUBSCRIBE")
        let sharedNoLocal = [0x00, 0x0A] + ascii("$share/g/a") + [0x04]
        expectDecodingError(subscribe(sharedNoLocal, .v5), .v5, .protocolViolation, "SUBSCRIBE", reasonContains: "No Local")
        expectDecodingError([0xA2, 0x02, 0x00, 0x01], .v3_1_1, .protocolViolation, "UNSUBSCRIBE")
    }

    @Test func encodingRefusesWhatCannotBeSent() {
        let longTopic = String(repeating: "a", count: 65536)
        expectEncodingError(.publish(MQTTPublish(topic: longTopic, payload: [])), .v5, .malformed, reasonContains: "65535")
        expectEncodingError(.publish(MQTTPublish(topic: "t", payload: [], qos: .atLeastOnce)), .v5, .protocolViolation)
        expectEncodingError(.publish(MQTTPublish(topic: "t", payload: [], packetID: 4)), .v3_1_1, .protocolViolation)
        expectEncodingError(.publish(MQTTPublish(topic: "t", payload: [], dup: true)), .v3_1_1, .protocolViolation)
        expectEncodingError(
            .publish(MQTTPublish(topic: "t", payload: [], qos: .atLeastOnce, packetID: 0)), .v3_1_1, .protocolViolation)
        expectEncodingError(.publish(MQTTPublish(topic: "a/+", payload: [])), .v3_1_1, .protocolViolation)
        expectEncodingError(.publish(MQTTPublish(topic: "", payload: [])), .v5, .protocolViolation)
        expectEncodingError(.publish(MQTTPublish(topic: "a\u{0}", payload: [])), .v5, .malformed)
        expectEncodingError(.auth(reasonCode: 0, properties: .init()), .v3_1_1, .protocolViolation)
        expectEncodingError(.subscribe(MQTTSubscribe(packetID: 1, subscriptions: [])), .v5, .protocolViolation)
        expectEncodingError(
            .subscribe(MQTTSubscribe(packetID: 1, subscriptions: [MQTTSubscription(topicFilter: "a/#/b", qos: .atMostOnce)])),
            .v5, .protocolViolation)
        expectEncodingError(
            .subscribe(
                MQTTSubscribe(packetID: 1, subscriptions: [MQTTSubscription(topicFilter: "a", qos: .atMostOnce, retainHandling: 3)])),
            .v5, .protocolViolation)
        expectEncodingError(.suback(MQTTSubAck(packetID: 1, reasonCodes: [0x03])), .v3_1_1, .protocolViolation)
        expectEncodingError(
            .connect(MQTTConnect(clientID: "c", cleanStart: true, keepAlive: 0, password: [1])), .v3_1_1, .protocolViolation)
        expectEncodingError(.connack(MQTTConnAck(sessionPresent: true, reasonCode: 0x80)), .v5, .protocolViolation)
        expectEncodingError(
            .publish(MQTTPublish(topic: "t", payload: [], correlationData: Array(repeating: 0, count: 70000))), .v5, .malformed)

        var notForConnect = MQTTProperties()
        notForConnect.topicAlias = 1
        expectEncodingError(
            .connect(MQTTConnect(clientID: "c", cleanStart: true, keepAlive: 0, properties: notForConnect)), .v5,
            .protocolViolation, reasonContains: "Topic Alias")
        var twoIdentifiers = MQTTProperties()
        twoIdentifiers.subscriptionIdentifiers = [1, 2]
        expectEncodingError(
            .subscribe(
                MQTTSubscribe(
                    packetID: 1, subscriptions: [MQTTSubscription(topicFilter: "a", qos: .atMostOnce)], properties: twoIdentifiers)),
            .v5, .protocolViolation)
        var badMaximumQoS = MQTTProperties()
        badMaximumQoS.maximumQoS = 2
        expectEncodingError(.connack(MQTTConnAck(properties: badMaximumQoS)), .v5, .protocolViolation)
    }
}

extension MQTTPublish {
    /// A QoS 0 PUBLISH with only Correlation Data set.
    fileprivate init(topic: String, payload: [UInt8], correlationData: [UInt8]) {
        var properties = MQTTProperties()
        properties.correlationData = correlationData
        self.init(topic: topic, payload: payload, properties: properties)
    }
}

/// The reason code a DISCONNECT reports for each kind of decoding error (MQTT 5 table 2-6).
@Test func decodingErrorKindsMapToTheirDisconnectReasonCodes() {
    #expect(MQTTCodecError.Kind.malformed.reasonCode == 0x81)
    #expect(MQTTCodecError.Kind.protocolViolation.reasonCode == 0x82)
    #expect(MQTTCodecError.Kind.packetTooLarge.reasonCode == 0x95)
}

/// A remaining length at its largest (268,435,455) with no packet size limit waits for the
/// body instead of allocating or overflowing; with a limit it is refused at once.
@Test func remainingLengthAtItsLimitWaitsOrIsRefused() throws {
    var buffer = ByteBuffer(bytes: [0x30, 0xFF, 0xFF, 0xFF, 0x7F, 0x00])
    #expect(try MQTTCodec.decode(from: &buffer, version: .v5, maximumPacketSize: .max) == nil)
    #expect(buffer.readableBytes == 6)
    expectDecodingError([0x30, 0xFF, 0xFF, 0xFF, 0x7F], .v5, .packetTooLarge, "PUBLISH", maximumPacketSize: 1 << 20)
}
