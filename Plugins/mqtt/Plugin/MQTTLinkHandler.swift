import NIOCore

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
}
