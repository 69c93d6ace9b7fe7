import MQTTCodec
import NIOCore
import Testing

/// Packets arriving a few bytes at a time, and packets too large to wait for.
@Suite struct MQTTCodecStreamingTests {
    @Test(arguments: [MQTTVersion.v3_1_1, .v5])
    func everyPrefixNeedsMoreBytes(version: MQTTVersion) throws {
        for packet in samplePackets(version) {
            let bytes = try encoded(packet, version)
            for length in 0..<bytes.count {
                var buffer = ByteBuffer(bytes: bytes[..<length])
                let decoded = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: .max)
                #expect(decoded == nil, "\(packet.name) prefix of \(length) bytes")
                #expect(buffer.readableBytes == length, "\(packet.name) prefix of \(length) bytes was consumed")
            }
            var whole = ByteBuffer(bytes: bytes)
            #expect(try MQTTCodec.decode(from: &whole, version: version, maximumPacketSize: .max) == packet)
        }
    }

    @Test func byteByByteFeedDecodesEveryPacket() throws {
        var all: [UInt8] = []
        let packets = samplePackets(.v5)
        for packet in packets { all += try encoded(packet, .v5) }
        var buffer = ByteBuffer()
        var decoded: [MQTTPacket] = []
        for byte in all {
            buffer.writeInteger(byte)
            while let packet = try MQTTCodec.decode(from: &buffer, version: .v5, maximumPacketSize: 1 << 16) {
                decoded.append(packet)
            }
        }
        #expect(decoded == packets)
        #expect(buffer.readableBytes == 0)
    }

    @Test func tooLargeRemainingLengthIsRejectedBeforeTheBody() {
        // PUBLISH announcing 1,000,000 bytes; only the fixed header has arrived.
        expectDecodingError([0x30, 0xC0, 0x84, 0x3D], .v5, .packetTooLarge, "PUBLISH", maximumPacketSize: 1024)
        expectDecodingError([0x30, 0xC0, 0x84, 0x3D], .v3_1_1, .packetTooLarge, "PUBLISH", maximumPacketSize: 1024)
        // The largest remaining length there is.
        expectDecodingError([0x90, 0xFF, 0xFF, 0xFF, 0x7F], .v5, .packetTooLarge, "SUBACK", maximumPacketSize: 1 << 20)
    }

    @Test func maximumPacketSizeCountsTheWholePacket() throws {
        let bytes = try encoded(.publish(MQTTPublish(topic: "t", payload: ascii("12345"))), .v3_1_1)
        #expect(bytes.count == 10)
        var exact = ByteBuffer(bytes: bytes)
        #expect(try MQTTCodec.decode(from: &exact, version: .v3_1_1, maximumPacketSize: 10) != nil)
        expectDecodingError(bytes, .v3_1_1, .packetTooLarge, "PUBLISH", maximumPacketSize: 9)
        // Rejected as soon as the remaining length is complete, without the body.
        expectDecodingError(Array(bytes.prefix(2)), .v3_1_1, .packetTooLarge, "PUBLISH", maximumPacketSize: 9)
    }

    @Test func incompleteRemainingLengthWaits() throws {
        for prefix in [[0x30], [0x30, 0x80], [0x30, 0xFF, 0xFF], [0x30, 0xFF, 0xFF, 0xFF]] as [[UInt8]] {
            var buffer = ByteBuffer(bytes: prefix)
            #expect(try MQTTCodec.decode(from: &buffer, version: .v5, maximumPacketSize: .max) == nil)
            #expect(buffer.readableBytes == prefix.count)
        }
    }
}
