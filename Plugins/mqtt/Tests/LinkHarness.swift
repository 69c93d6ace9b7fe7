import MQTTCodec
import NIOCore
import NIOEmbedded
import PluginTestSupport
import SwitchyardCore
import Synchronization
import Testing

@testable import MQTTPlugin

/// One MQTT link on an `EmbeddedEventLoop`, each of its connections an `EmbeddedChannel` on
/// which the test is the broker: it reads the packets the link sent and writes the broker's.
/// Time is the loop's: the CONNACK deadline, pings and the reconnect backoff fire only when a
/// test advances it. The link reports to a ``RecordingHost``.
///
/// Every test calls ``finish()`` when done (a `defer`): it closes the connections and cancels
/// the timers left, as the loop must not be freed with tasks scheduled.
final class LinkHarness {
    let loop = EmbeddedEventLoop()
    let host = RecordingHost()
    let link: MQTTLink
    let broker: BrokerConnections
    private let version: MQTTVersion

    /// A link for the instance configuration `config` (the mqtt plugin's keys), not started.
    init(_ config: JSONValue, instance: String = "bridge") throws {
        let configuration = try MQTTLinkConfiguration(instance: instance, config: config)
        let broker = BrokerConnections(loop: loop)
        self.broker = broker
        version = configuration.version
        link = MQTTLink(
            configuration: configuration, context: host.context, instance: instance, eventLoop: loop,
            dial: { link in broker.dial(link) })
    }

    /// The connections the link opened, oldest first.
    var channels: [EmbeddedChannel] { broker.opened }

    /// Starts the link and runs the loop: it dials its first connection and sends CONNECT.
    func start() {
        link.start()
        loop.run()
    }

    /// Starts the link, has the broker accept its CONNECT and returns the connection, with what
    /// the link sent so far read (CONNECT and its SUBSCRIBE).
    func connect(sessionPresent: Bool = false) throws -> EmbeddedChannel {
        start()
        let connection = try #require(channels.last)
        let first = try sent(on: connection).first
        guard case .connect = first else { throw HarnessError("the link opened with \(String(describing: first)), not CONNECT") }
        try receive(.connack(MQTTConnAck(sessionPresent: sessionPresent)), on: connection)
        _ = try sent(on: connection)
        return connection
    }

    /// Runs what the loop has due, then takes every packet the link has written to `connection`
    /// since the last call, in order.
    func sent(on connection: EmbeddedChannel) throws -> [MQTTPacket] {
        loop.run()
        var bytes = ByteBuffer()
        while var chunk = try connection.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&chunk) }
        var packets: [MQTTPacket] = []
        while let packet = try MQTTCodec.decode(from: &bytes, version: version, maximumPacketSize: .max) { packets.append(packet) }
        if bytes.readableBytes > 0 { throw HarnessError("\(bytes.readableBytes) bytes written that are no whole packet") }
        return packets
    }

    /// The broker sends `packets` on `connection`; the loop then runs what they set off.
    func receive(_ packets: MQTTPacket..., on connection: EmbeddedChannel) throws {
        var bytes = ByteBuffer()
        for packet in packets { try MQTTCodec.encode(packet, version: version, into: &bytes) }
        try connection.writeInbound(bytes)
        loop.run()
    }

    /// Closes every connection and cancels the timers left.
    func finish() {
        for channel in channels { _ = try? channel.finish(acceptAlreadyClosed: true) }
        try? loop.syncShutdownGracefully()
    }
}

/// Plays the broker's side of connecting: each attempt of the link is an `EmbeddedChannel`
/// with the link's handlers, connected at once, or a failed attempt while ``refusing`` is set.
final class BrokerConnections: Sendable {
    private let loop: EmbeddedEventLoop
    private let channels = Mutex<[EmbeddedChannel]>([])
    private let failedAttempts = Atomic<Int>(0)
    /// While set, attempts fail as they do when the broker does not answer.
    let refusing = Atomic<Bool>(false)

    init(loop: EmbeddedEventLoop) { self.loop = loop }

    /// The connections opened, oldest first.
    var opened: [EmbeddedChannel] { channels.withLock { $0 } }

    /// Every attempt to connect, those that failed included.
    var attempts: Int { opened.count + failedAttempts.load(ordering: .relaxed) }

    /// The link's ``MQTTConnector/Dial``.
    func dial(_ link: MQTTLink) -> EventLoopFuture<any Channel> {
        if refusing.load(ordering: .relaxed) {
            failedAttempts.add(1, ordering: .relaxed)
            return loop.makeFailedFuture(ChannelError.connectTimeout(.seconds(10)))
        }
        let channel = EmbeddedChannel(loop: loop)
        channels.withLock { $0.append(channel) }
        do {
            try MQTTConnector.addHandlers(for: link, to: channel)
            return channel.connect(to: try SocketAddress(ipAddress: "192.0.2.1", port: 1883)).map { channel }
        } catch {
            return loop.makeFailedFuture(error)
        }
    }
}

/// The harness was used wrongly, or the link said something that is no MQTT.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
