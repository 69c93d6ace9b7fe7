import MQTTCodec
import NIOCore
import NIOPosix

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
