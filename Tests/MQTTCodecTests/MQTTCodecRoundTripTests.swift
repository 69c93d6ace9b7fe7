import MQTTCodec
import NIOCore
import Testing

@Suite struct MQTTCodecRoundTripTests {
    @Test(arguments: [MQTTVersion.v3_1_1, .v5])
    func everyPacketTypeRoundTrips(version: MQTTVersion) throws {
        let packets = samplePackets(version)
        var seenTypes = Set<String>()
        for packet in packets {
            let bytes = try encoded(packet, version)
            let decoded = try decodedWhole(bytes, version)
            #expect(decoded == packet, "\(packet.name)")
            seenTypes.insert(packet.name)
        }
        let expected: Set<String> = [
            "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP", "SUBSCRIBE", "SUBACK",
            "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT",
        ]
        #expect(seenTypes == (version == .v5 ? expected.union(["AUTH"]) : expected))
    }

    @Test(arguments: [MQTTVersion.v3_1_1, .v5])
    func packetsInOneBufferDecodeInOrder(version: MQTTVersion) throws {
        let packets = samplePackets(version)
        var buffer = ByteBuffer()
        for packet in packets { try MQTTCodec.encode(packet, version: version, into: &buffer) }
        var decoded: [MQTTPacket] = []
        while let packet = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: 1 << 16) {
            decoded.append(packet)
        }
        #expect(decoded == packets)
        #expect(buffer.readableBytes == 0)
    }

    @Test func encodingAppendsAfterExistingBytes() throws {
        var buffer = ByteBuffer(bytes: [1, 2, 3])
        try MQTTCodec.encode(.pingreq, version: .v5, into: &buffer)
        #expect(Array(buffer.readableBytesView) == [1, 2, 3, 0xC0, 0x00])
    }

    @Test func mqtt311IgnoresPropertiesAndReasonCodes() throws {
        var properties = MQTTProperties()
        properties.reasonString = "dropped"
        let ack = MQTTPacket.puback(MQTTAck(packetID: 5, reasonCode: 0x80, properties: properties))
        #expect(try encoded(ack, .v3_1_1) == [0x40, 0x02, 0x00, 0x05])
        let unsuback = MQTTPacket.unsuback(MQTTUnsubAck(packetID: 5, reasonCodes: [0x11]))
        #expect(try encoded(unsuback, .v3_1_1) == [0xB0, 0x02, 0x00, 0x05])
        #expect(try encoded(.disconnect(MQTTDisconnect(reasonCode: 4)), .v3_1_1) == [0xE0, 0x00])
    }

    @Test func largePayloadUsesMultiByteRemainingLength() throws {
        let payload = [UInt8](repeating: 0x42, count: 200_000)
        let packet = MQTTPacket.publish(MQTTPublish(topic: "big", payload: payload, qos: .atLeastOnce, packetID: 2))
        let bytes = try encoded(packet, .v5)
        // 2 + 3 topic + 2 packet id + 1 property length + payload = 200,008 = 0x030D48.
        #expect(Array(bytes.prefix(4)) == [0x32, 0xC8, 0x9A, 0x0C])
        #expect(bytes.count == 4 + 200_008)
        #expect(try decodedWhole(bytes, .v5) == packet)
    }

    @Test func packetNames() {
        #expect(MQTTPacket.pingreq.name == "PINGREQ")
        #expect(MQTTPacket.pubrel(MQTTAck(packetID: 1)).name == "PUBREL")
        #expect(MQTTPacket.auth(reasonCode: 0, properties: .init()).name == "AUTH")
        #expect(MQTTPacket.unsuback(MQTTUnsubAck(packetID: 1)).name == "UNSUBACK")
    }

    @Test func qosIsOrdered() {
        #expect(MQTTQoS.atMostOnce < .atLeastOnce)
        #expect(MQTTQoS.atLeastOnce < .exactlyOnce)
        #expect(min(MQTTQoS.exactlyOnce, .atLeastOnce) == .atLeastOnce)
    }

    @Test func errorDescriptions() {
        let malformed = MQTTCodecError(kind: .malformed, packet: "PUBLISH", reason: "topic is not valid UTF-8")
        #expect(malformed.description == "malformed PUBLISH packet: topic is not valid UTF-8")
        let violation = MQTTCodecError(kind: .protocolViolation, packet: "SUBACK", reason: "SUBACK has no reason codes")
        #expect(violation.description == "protocol violation in SUBACK packet: SUBACK has no reason codes")
        let large = MQTTCodecError(kind: .packetTooLarge, packet: "PUBLISH", reason: "too big")
        #expect(large.description == "PUBLISH packet too large: too big")
    }
}
