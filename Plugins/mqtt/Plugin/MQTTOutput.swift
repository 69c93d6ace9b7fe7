import MQTTCodec
import NIOCore
import SwitchyardPluginKit
import Synchronization

/// The link's way to the socket: encodes packets into one buffer per event-loop turn, hands it
/// to the channel, and tracks whether the socket keeps up (the send buffer's water marks).
///
/// The buffer and its bookkeeping are confined to the link's event loop (checked at each
/// access); the writability flag and the stall count are atomics, so the router's threads can
/// ask whether another publish fits.
final class MQTTOutput: Sendable {
    /// How many bytes may wait unsent before the link stops taking publishes, and how few
    /// before it takes them again.
    static let writeBufferWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 256 * 1024, high: 1024 * 1024)

    /// The output buffer's initial capacity: a loop turn's worth of small publishes.
    private static let outgoingCapacity = 16 * 1024

    private let version: MQTTVersion
    private let context: PluginContext
    private let eventLoop: any EventLoop
    /// False while the socket has more unsent bytes than the high water mark (a broker that
    /// does not keep up): QoS 0 publishes are finished once buffered, so without this a
    /// stream to a stalled broker would buffer without bound (any thread reads it).
    private let socketWritable = Atomic<Bool>(true)
    /// Times the socket stopped being writable (for the log; the metric is the counter).
    private let writeStalls = Atomic<Int>(0)
    /// What the event loop keeps between writes.
    private struct Buffered {
        var flushScheduled = false
        /// Packets encoded for the current channel and not yet handed to it.
        var outgoing = ByteBuffer()
        /// Writes handed to the channel that the socket has not taken completely yet.
        var unfinishedFlushes = 0
        /// The channel the buffer is for: a flush scheduled for a lost one is dropped.
        var channel: (any Channel)?
    }

    private let buffered: NIOLoopBoundBox<Buffered>

    init(version: MQTTVersion, context: PluginContext, eventLoop: any EventLoop) {
        self.version = version
        self.context = context
        self.eventLoop = eventLoop
        buffered = .makeBoxSendingValue(Buffered(), as: Buffered.self, eventLoop: eventLoop)
    }

    /// Whether the socket's send buffer is below its high water mark (any thread).
    var isWritable: Bool { socketWritable.load(ordering: .relaxed) }

    /// A new connection: packets are encoded for `channel` from now on.
    func connected(_ channel: any Channel) {
        buffered.value.channel = channel
        buffered.value.outgoing = channel.allocator.buffer(capacity: Self.outgoingCapacity)
    }

    /// The connection is gone: what was encoded for it is dropped (what matters is resent from
    /// the inflight window), and publishes wait in the window until reconnected.
    func connectionLost() {
        socketWritable.store(true, ordering: .relaxed)
        buffered.value.channel = nil
        buffered.value.outgoing = ByteBuffer()
    }

    /// Encodes a packet into the connection's output buffer. With `flush: false` the buffer
    /// goes to the socket once for everything written in this turn of the event loop, so a
    /// burst of publishes costs one write and no promise per packet. A failed write closes the
    /// channel, and the link's `channelInactive()` deals with what the broker had not confirmed.
    func write(_ packet: MQTTPacket, on channel: any Channel, flush: Bool = true) {
        do {
            try MQTTCodec.encode(packet, version: version, into: &buffered.value.outgoing)
        } catch {
            context.log(.error, "cannot encode \(packet.name): \(error)")
            return
        }
        if flush {
            _ = self.flush(on: channel)
        } else if !buffered.value.flushScheduled {
            buffered.value.flushScheduled = true
            eventLoop.execute {
                self.buffered.value.flushScheduled = false
                guard self.buffered.value.channel === channel else { return }
                _ = self.flush(on: channel)
            }
        }
    }

    /// Hands what the output buffer holds to the socket; the future completes when it is written.
    func flush(on channel: any Channel) -> EventLoopFuture<Void> {
        guard buffered.value.outgoing.readableBytes > 0 else { return eventLoop.makeSucceededVoidFuture() }
        let written: EventLoopFuture<Void>
        if buffered.value.unfinishedFlushes == 0 {
            // Usually the socket takes it all at once, the channel lets go of the storage, and
            // clear() below reuses it.
            written = channel.writeAndFlush(buffered.value.outgoing)
        } else {
            // The socket is behind: this write will wait too, so it gets storage of its own
            // size rather than holding on to the whole output buffer (the water mark counts
            // bytes, not capacity).
            var compact = channel.allocator.buffer(capacity: buffered.value.outgoing.readableBytes)
            compact.writeImmutableBuffer(buffered.value.outgoing)
            written = channel.writeAndFlush(compact)
        }
        buffered.value.unfinishedFlushes += 1
        written.whenComplete { _ in self.buffered.value.unfinishedFlushes -= 1 }
        buffered.value.outgoing.clear()
        return written
    }

    /// The socket's send buffer crossed a water mark.
    func writabilityChanged(_ writable: Bool) {
        socketWritable.store(writable, ordering: .relaxed)
        guard !writable else { return }
        let stalls = writeStalls.add(1, ordering: .relaxed).newValue
        context.metric(.counter, "mqtt_write_stalls_total", 1)
        if stalls == 1 || stalls.isMultiple(of: 1000) {
            context.log(
                .notice,
                "the broker is not reading fast enough: over \(Self.writeBufferWaterMark.high) bytes unsent, publishing paused (mqtt_write_stalls_total=\(stalls))"
            )
        }
    }
}
