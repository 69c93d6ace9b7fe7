public import NIOCore

/// Encodes and decodes MQTT 3.1.1 and MQTT 5 control packets. No I/O, no state: the caller keeps the
/// negotiated version, the maximum packet size and any topic aliases.
public enum MQTTCodec {
    /// Appends the packet's wire form (fixed header + remaining length + body) for `version`.
    ///
    /// Throws for unencodable input, such as a string longer than 65535 bytes, a QoS > 0 PUBLISH without
    /// a packet identifier, an invalid topic name or filter, a property the packet type does not allow
    /// or AUTH with MQTT 3.1.1. MQTT 5 properties and reason codes are ignored for MQTT 3.1.1. On a
    /// throw `buffer` is left as it was.
    public static func encode(
        _ packet: MQTTPacket, version: MQTTVersion, into buffer: inout ByteBuffer
    ) throws(MQTTCodecError) {
        let start = buffer.writerIndex
        do throws(MQTTCodecError) {
            try MQTTPacketEncoder(version: version).encode(packet, into: &buffer)
        } catch {
            buffer.moveWriterIndex(to: start)
            throw error.naming(packet.name)
        }
    }

    /// Decodes one packet from the front of `buffer` and consumes its bytes; returns nil (consuming nothing)
    /// when more bytes are needed. Throws for malformed packets and packets over `maximumPacketSize`
    /// (check the remaining length as soon as it is read, before waiting for the body).
    ///
    /// `maximumPacketSize` bounds the whole packet, fixed header included, as MQTT 5's Maximum Packet
    /// Size does. The packet type and its fixed-header flags are checked as soon as the first byte is
    /// there. On a throw `buffer` is left as it was; the connection should be closed.
    public static func decode(
        from buffer: inout ByteBuffer, version: MQTTVersion, maximumPacketSize: Int
    ) throws(MQTTCodecError) -> MQTTPacket? {
        let start = buffer.readerIndex
        guard let first = buffer.getInteger(at: start, as: UInt8.self) else { return nil }
        let flags = first & 0x0F
        guard let type = MQTTPacketType(rawValue: first >> 4), type != .auth || version == .v5 else {
            throw MQTTCodecError(
                kind: .malformed, packet: "unknown(\(hexByte(first)))", reason: "packet type \(first >> 4) is reserved")
        }
        if type == .publish {
            guard flags & 0b0110 != 0b0110 else {
                throw MQTTCodecError(kind: .malformed, packet: type.name, reason: "QoS is 3")
            }
        } else if flags != type.fixedFlags {
            throw MQTTCodecError(
                kind: .malformed, packet: type.name,
                reason: "fixed header flags are \(binaryNibble(flags)), not \(binaryNibble(type.fixedFlags))")
        }

        var remainingLength = 0
        var headerLength = 0
        for position in 0..<4 {
            guard let byte = buffer.getInteger(at: start + 1 + position, as: UInt8.self) else { return nil }
            remainingLength |= Int(byte & 0x7F) << (7 * position)
            if byte & 0x80 == 0 {
                headerLength = 2 + position
                break
            }
        }
        guard headerLength > 0 else {
            throw MQTTCodecError(
                kind: .malformed, packet: type.name, reason: "remaining length is longer than 4 bytes")
        }
        let packetLength = headerLength + remainingLength
        guard packetLength <= maximumPacketSize else {
            throw MQTTCodecError(
                kind: .packetTooLarge, packet: type.name,
                reason: "\(packetLength) bytes exceed the maximum packet size of \(maximumPacketSize)")
        }
        guard let body = buffer.getSlice(at: start + headerLength, length: remainingLength) else { return nil }

        var decoder = MQTTPacketBodyDecoder(body: body, version: version)
        let packet: MQTTPacket
        do throws(MQTTCodecError) {
            packet = try decoder.decode(type, flags: flags)
        } catch {
            throw error.naming(type.name)
        }
        buffer.moveReaderIndex(forwardBy: packetLength)
        return packet
    }

    /// Formats the low four bits of `flags` as `0bNNNN`.
    private static func binaryNibble(_ flags: UInt8) -> String {
        let digits = String(flags & 0x0F, radix: 2)
        return "0b" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}
