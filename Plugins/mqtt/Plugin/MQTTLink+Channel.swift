import MQTTCodec
import NIOCore
import NIOPosix
import NIOSSL

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

/// Hands connection events to the link (``MQTTPacketDecoder`` hands it the packets).
final class MQTTLinkHandler: ChannelInboundHandler {
    typealias InboundIn = Never

    let link: MQTTLink

    init(link: MQTTLink) { self.link = link }

    func channelInactive(context: ChannelHandlerContext) {
        link.channelInactive()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        link.writabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        link.failed(error)
        context.close(promise: nil)
    }

    /// A client bootstrap for `link`'s broker: TLS when configured, the packet decoder and
    /// this handler, and the send buffer's water marks (see ``MQTTOutput``).
    static func bootstrap(for link: MQTTLink, sslContext: NIOSSLContext?) -> ClientBootstrap {
        let configuration = link.configuration
        return ClientBootstrap(group: link.eventLoop)
            .connectTimeout(.seconds(10))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelOption(ChannelOptions.writeBufferWaterMark, value: MQTTOutput.writeBufferWaterMark)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        let serverName = configuration.tls?.serverName(connectingTo: configuration.host)
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(
                            MQTTPacketDecoder(
                                version: configuration.version, maximumPacketSize: configuration.maximumPacketSize, link: link))
                    )
                    try channel.pipeline.syncOperations.addHandler(MQTTLinkHandler(link: link))
                }
            }
    }
}

extension MQTTLink {
    /// The event loop every link of the plugin runs on. One thread for all links: a route from
    /// one link to another then hands the broker's PUBACK on to the other link's settlement
    /// without a thread hop or a wake-up, and two links do not take turns on two threads.
    static let sharedEventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()

    /// Closes the connection after a broker broke the protocol, with a DISCONNECT saying why
    /// (MQTT 5; `reasonCode` 0x82 Protocol Error unless a more precise one applies).
    func protocolViolation(_ reason: String, _ channel: any Channel, reasonCode: UInt8 = 0x82) {
        context.metric(.counter, "mqtt_bad_packets_total", 1)
        context.log(.error, "closing the connection to \(peer): protocol violation: \(reason)")
        sendDisconnect(reasonCode: reasonCode, on: channel)
        channel.close(promise: nil)
    }

    /// An MQTT 5 DISCONNECT with `reasonCode`, written at once (the connection closes next).
    func sendDisconnect(reasonCode: UInt8, on channel: any Channel) {
        guard configuration.version == .v5, connected, self.channel === channel else { return }
        output.write(.disconnect(MQTTDisconnect(reasonCode: reasonCode)), on: channel)
    }
}
