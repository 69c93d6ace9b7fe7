// libFuzzer entry point for the MQTT codec (built by scripts/fuzz). Input: a byte whose low bit
// picks MQTT 3.1.1 or 5, a byte that seeds the chunk sizes, then the stream from the broker.
// Decoding the stream in chunks gives the packets (and the error) decoding it whole gives; a
// throw consumes nothing; every packet decoded encodes and decodes to itself.
import MQTTCodec
import NIOCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMQTTCodec(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard bytes.count >= 2 else { return 0 }
    let version: MQTTVersion = bytes[0] & 1 == 0 ? .v3_1_1 : .v5
    let stream = Array(bytes[2...])
    let whole = decodeAll([stream], version)
    var chunks: [[UInt8]] = []
    var state = UInt32(bytes[1]) | 1
    var start = 0
    while start < stream.count {
        state = state &* 1_103_515_245 &+ 12345
        let length = min(stream.count - start, Int(state >> 16) % 17 + 1)
        chunks.append(Array(stream[start..<start + length]))
        start += length
    }
    let chunked = decodeAll(chunks, version)
    precondition(whole.packets == chunked.packets, "chunking changed the packets")
    precondition(whole.error == chunked.error, "chunking changed the error")
    for packet in whole.packets {
        var buffer = ByteBuffer()
        do throws(MQTTCodecError) {
            try MQTTCodec.encode(packet, version: version, into: &buffer)
            let again = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: 1 << 20)
            precondition(again == packet && buffer.readableBytes == 0, "the encode round trip changed the packet")
        } catch {
            preconditionFailure("a decoded packet does not encode: \(error)")
        }
    }
    return 0
}

/// Appends each chunk and decodes what is complete, as the plugin's channel handler does.
private func decodeAll(_ chunks: [[UInt8]], _ version: MQTTVersion) -> (packets: [MQTTPacket], error: String?) {
    var buffer = ByteBuffer()
    var packets: [MQTTPacket] = []
    for chunk in chunks {
        buffer.writeBytes(chunk)
        while true {
            let before = buffer.readableBytes
            do throws(MQTTCodecError) {
                guard let packet = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: 4096) else {
                    precondition(buffer.readableBytes == before, "an incomplete packet consumed bytes")
                    break
                }
                precondition(buffer.readableBytes < before, "a packet consumed nothing")
                packets.append(packet)
            } catch {
                precondition(buffer.readableBytes == before, "a throw consumed bytes")
                precondition(!error.reason.isEmpty, "an error without a reason")
                return (packets, "\(error)")
            }
        }
    }
    return (packets, nil)
}
