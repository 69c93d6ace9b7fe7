import MQTTCodec
import NIOCore

/// Frames bytes from the broker into packets with ``MQTTCodec`` and hands each to the link
/// directly: sending packets down the pipeline would box every one in an `NIOAny`.
struct MQTTPacketDecoder: ByteToMessageDecoder {
    typealias InboundOut = Never

    let version: MQTTVersion
    let maximumPacketSize: Int
    let link: MQTTLink

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let packet = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: maximumPacketSize) else {
            return .needMoreData
        }
        link.received(packet)
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}
