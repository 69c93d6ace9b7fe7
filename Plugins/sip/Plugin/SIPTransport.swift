import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import SIPCodec
import SwitchyardConnectionGuard
import SwitchyardPluginKit

/// Where a message came from, and so where its answer goes (RFC 3261 §18.2.2): over a stream,
/// back on the connection it arrived on; over UDP, to its source address (`rport`, RFC 3581).
struct SIPPeer: Sendable {
    var transport: SIPTransportKind
    var address: SocketAddress
    /// The connection of a stream transport (written to on the transport's event loop).
    var connection: (any Channel)?

    var addressText: String { "\(transport.rawValue):\(address.ipAddress ?? "?"):\(address.port ?? 0)" }
}

/// The transport's owner, held weakly (the owner holds the transport).
struct WeakTransportDelegate {
    weak var delegate: (any SIPTransportDelegate)?
}

/// What the transport reports to its owner, always on its event loop.
protocol SIPTransportDelegate: AnyObject {
    /// A message arrived.
    func transport(received message: SIPMessage, from peer: SIPPeer)
    /// Bytes arrived that are not a SIP message. `bytes` is what a datagram held (for a 400),
    /// empty for a stream, whose connection is then closed.
    func transport(malformed bytes: [UInt8], error: SIPParseError, from peer: SIPPeer)
    /// A stream connection closed.
    func transport(closed key: String)
    /// A limit made the transport refuse or close a connection from `peer`.
    func transport(limited event: SIPTransportLimit, peer: String)
}

/// Why the transport refused or closed an inbound connection.
enum SIPTransportLimit: Sendable {
    /// A message begun on an accepted connection was not complete within `limits.message_timeout`.
    case messageTimeout(Duration)
    /// Nothing came for `limits.idle_timeout`.
    case idle(Duration)
    /// The TLS handshake took longer than `limits.tls_handshake_timeout`.
    case tlsHandshakeTimeout(Duration)
}

/// The sockets of one sip instance: a UDP socket, a TCP listener on the same port, an optional
/// TLS listener, and outgoing TCP/TLS connections kept per target. Everything runs on one event
/// loop, the owner's: its state is confined there (a `NIOLoopBoundBox`, checked at each access).
final class SIPTransport: Sendable {
    let eventLoop: any EventLoop
    // Each field confined to the event loop has a box of its own (`NIOLoopBoundBox`, checked
    // at each access): one box for all would make any two overlapping accesses conflict.
    private let _configuration: NIOLoopBoundBox<SIPConfiguration>
    private let _delegate: NIOLoopBoundBox<WeakTransportDelegate>
    private let _udp: NIOLoopBoundBox<(any Channel)?>
    private let _listeners: NIOLoopBoundBox<[any Channel]>
    private let _connections: NIOLoopBoundBox<[String: EventLoopFuture<any Channel>]>
    private let _resolved: NIOLoopBoundBox<[String: SocketAddress]>
    private let _clientTLS: NIOLoopBoundBox<NIOSSLContext?>
    private let _serverTLS: NIOLoopBoundBox<NIOSSLContext?>
    private let _slots: NIOLoopBoundBox<[SIPTransportKind: ConnectionSlots]>
    private let _port: NIOLoopBoundBox<Int>
    private let _tlsPort: NIOLoopBoundBox<Int?>

    /// Replaced by ``adopt(_:)``.
    private var configuration: SIPConfiguration {
        get { _configuration.value }
        _modify { yield &_configuration.value }
    }
    /// Who hears what arrives: the owner, given at ``start(reportingTo:)``.
    private var delegate: (any SIPTransportDelegate)? {
        get { _delegate.value.delegate }
        set { _delegate.value.delegate = newValue }
    }
    private var udp: (any Channel)? {
        get { _udp.value }
        _modify { yield &_udp.value }
    }
    private var listeners: [any Channel] {
        get { _listeners.value }
        _modify { yield &_listeners.value }
    }
    /// Stream connections by ``key(_:_:_:)``: outgoing ones by target, accepted ones by peer address.
    private var connections: [String: EventLoopFuture<any Channel>] {
        get { _connections.value }
        _modify { yield &_connections.value }
    }
    private var resolved: [String: SocketAddress] {
        get { _resolved.value }
        _modify { yield &_resolved.value }
    }
    private var clientTLS: NIOSSLContext? {
        get { _clientTLS.value }
        _modify { yield &_clientTLS.value }
    }
    private var serverTLS: NIOSSLContext? {
        get { _serverTLS.value }
        _modify { yield &_serverTLS.value }
    }
    /// The connection slots of each listener (`tcp`, `tls`): `limits.max_connections` and
    /// `max_connections_per_peer`, where a connection in the middle of a message makes room.
    private var slots: [SIPTransportKind: ConnectionSlots] {
        get { _slots.value }
        _modify { yield &_slots.value }
    }
    /// The UDP/TCP port in use (the configured one, or the one the system chose for port 0).
    private(set) var port: Int {
        get { _port.value }
        _modify { yield &_port.value }
    }
    /// The TLS listener's port, when there is one.
    private(set) var tlsPort: Int? {
        get { _tlsPort.value }
        _modify { yield &_tlsPort.value }
    }

    /// Where the listeners' refusals, evictions and accept failures are logged and counted.
    private let reporter: any ConnectionGuardReporter

    init(configuration: SIPConfiguration, eventLoop: any EventLoop, reporter: any ConnectionGuardReporter) {
        self.eventLoop = eventLoop
        self.reporter = reporter
        _configuration = .makeBoxSendingValue(configuration, as: SIPConfiguration.self, eventLoop: eventLoop)
        _delegate = .makeBoxSendingValue(WeakTransportDelegate(), as: WeakTransportDelegate.self, eventLoop: eventLoop)
        _udp = .makeBoxSendingValue(nil, as: (any Channel)?.self, eventLoop: eventLoop)
        _listeners = .makeBoxSendingValue([], as: [any Channel].self, eventLoop: eventLoop)
        _connections = .makeBoxSendingValue([:], as: [String: EventLoopFuture<any Channel>].self, eventLoop: eventLoop)
        _resolved = .makeBoxSendingValue([:], as: [String: SocketAddress].self, eventLoop: eventLoop)
        _clientTLS = .makeBoxSendingValue(nil, as: NIOSSLContext?.self, eventLoop: eventLoop)
        _serverTLS = .makeBoxSendingValue(nil, as: NIOSSLContext?.self, eventLoop: eventLoop)
        _slots = .makeBoxSendingValue([:], as: [SIPTransportKind: ConnectionSlots].self, eventLoop: eventLoop)
        _port = .makeBoxSendingValue(0, as: Int.self, eventLoop: eventLoop)
        _tlsPort = .makeBoxSendingValue(nil, as: Int?.self, eventLoop: eventLoop)
    }

    /// Takes a configuration with the same sockets (listen, TLS, limits); it applies to what comes next.
    func adopt(_ configuration: SIPConfiguration) {
        eventLoop.assertInEventLoop()
        self.configuration = configuration
    }

    /// Binds the sockets, reporting what arrives to `delegate`. Port 0 binds UDP on a free
    /// port and TCP on the same number.
    func start(reportingTo delegate: any SIPTransportDelegate) -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        self.delegate = delegate
        do {
            if let tls = configuration.tls {
                var client = TLSConfiguration.makeClientConfiguration()
                if let caFile = tls.caFile { client.trustRoots = .file(caFile) }
                client.certificateVerification = tls.verify ? .fullVerification : .none
                if let certificateFile = tls.certificateFile, let keyFile = tls.keyFile {
                    let chain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { NIOSSLCertificateSource.certificate($0) }
                    let key = NIOSSLPrivateKeySource.privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
                    client.certificateChain = chain
                    client.privateKey = key
                    serverTLS = try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: chain, privateKey: key))
                }
                clientTLS = try NIOSSLContext(configuration: client)
            }
        } catch {
            return eventLoop.makeFailedFuture(TransportError("tls: \(error)"))
        }
        let host = configuration.listenHost
        return bindDatagramAndStream(host: host, attemptsLeft: 8)
            .flatMap {
                guard self.serverTLS != nil else { return self.eventLoop.makeSucceededVoidFuture() }
                return self.listen(host: host, port: self.configuration.tlsListenPort(besides: self.port), tls: true)
            }
    }

    /// Takes `channel` as the UDP socket instead of binding one, reporting what it reads to
    /// `delegate`; opens no TCP or TLS listener. The seam that drives an agent without a
    /// network: SIPPluginTests hand in an `EmbeddedChannel` on the agent's `EmbeddedEventLoop`.
    func start(datagramChannel channel: any Channel, reportingTo delegate: any SIPTransportDelegate) throws {
        eventLoop.assertInEventLoop()
        self.delegate = delegate
        try channel.pipeline.syncOperations.addHandler(DatagramHandler(transport: self))
        udp = channel
        port = channel.localAddress?.port ?? configuration.listenPort
    }

    /// UDP and TCP on one port. With port 0 the kernel picks the UDP port, and another socket
    /// may already hold that TCP port: then both are tried again on a new port.
    private func bindDatagramAndStream(host: String, attemptsLeft: Int) -> EventLoopFuture<Void> {
        DatagramBootstrap(group: eventLoop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            // One byte over the limit (at most a UDP datagram's 65535) shows a datagram too large
            // instead of cutting it (NIO reads 2048 bytes by default).
            .channelOption(
                .recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: min(configuration.limits.parser.messageBytes, 65535) + 1)
            )
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DatagramHandler(transport: self)) }
            }
            .bind(host: host, port: configuration.listenPort)
            .flatMap { channel in
                self.udp = channel
                self.port = channel.localAddress?.port ?? self.configuration.listenPort
                return self.listen(host: host, port: self.port, tls: false)
                    .flatMapError { error in
                        guard self.configuration.listenPort == 0, attemptsLeft > 1 else { return self.eventLoop.makeFailedFuture(error) }
                        self.udp = nil
                        return channel.close().recover { _ in }.flatMap {
                            self.bindDatagramAndStream(host: host, attemptsLeft: attemptsLeft - 1)
                        }
                    }
            }
    }

    private func listen(host: String, port: Int, tls: Bool) -> EventLoopFuture<Void> {
        let kind: SIPTransportKind = tls ? .tls : .tcp
        let limits = configuration.limits
        let slots = ConnectionSlots(
            name: kind.rawValue, unit: "message", maximumConnections: limits.connectionsPerListener,
            maximumPerPeer: limits.connectionsPerPeer, reporter: reporter)
        self.slots[kind] = slots
        return ServerBootstrap(group: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(AcceptFailureMonitor(slots: slots)) }
            }
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try self.accept(channel, kind: kind, slots: slots) }
            }
            .bind(host: host, port: port)
            .map { channel in
                self.listeners.append(channel)
                if tls { self.tlsPort = channel.localAddress?.port }
            }
    }

    /// Sets up an accepted connection, or refuses it when the listener or its address is at
    /// its limit (at the listener's cap, a connection that is waiting makes room first).
    private func accept(_ channel: any Channel, kind: SIPTransportKind, slots: ConnectionSlots) throws {
        let peer = Self.key(kind, channel.remoteAddress?.ipAddress ?? "?", channel.remoteAddress?.port ?? 0)
        let limits = configuration.limits
        let (slot, refusal) = slots.admit(channel)
        channel.closeFuture.whenComplete { _ in slots.release(slot) }
        // A failed initializer closes the connection at once.
        if let refusal { throw TransportError("\(peer): \(refusal)") }
        let pipeline = channel.pipeline.syncOperations
        if kind == .tls, let serverTLS {
            try pipeline.addHandler(NIOSSLServerHandler(context: serverTLS))
            try pipeline.addHandler(
                TLSHandshakeDeadline(timeout: limits.tlsHandshakeTimeout) { self.limited(.tlsHandshakeTimeout($0), peer) })
        }
        try pipeline.addHandler(IdleStateHandler(readTimeout: TimeAmount(limits.idleTimeout)))
        connections[peer] = channel.eventLoop.makeSucceededFuture(channel)
        let admitted = StreamHandler.Admitted(
            slots: slots, slot: slot, idleTimeout: limits.idleTimeout, messageTimeout: TimeAmount(limits.messageTimeout))
        try pipeline.addHandler(StreamHandler(transport: self, kind: kind, key: peer, admitted: admitted))
    }

    func limited(_ event: SIPTransportLimit, _ peer: String) { delegate?.transport(limited: event, peer: peer) }

    /// Handles one datagram from `address`: a message for the delegate, or a parse error. The
    /// UDP socket's reader calls it; so can a fuzzer, on the event loop, without a socket.
    func receive(datagram bytes: [UInt8], from address: SocketAddress) {
        eventLoop.assertInEventLoop()
        let peer = SIPPeer(transport: .udp, address: address)
        // RFC 5626 keep-alives (CRLF pings) and stray blank datagrams are not messages.
        if bytes.allSatisfy({ $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") || $0 == 0 }) { return }
        do throws(SIPParseError) {
            deliver(try SIPParser.parse(datagram: bytes, limits: limits), from: peer)
        } catch {
            reject(bytes, error, from: peer)
        }
    }

    /// Closes every socket.
    func stop() -> EventLoopFuture<Void> {
        let channels = [udp].compactMap { $0 } + listeners
        let streams = connections.values.map { $0.flatMap { $0.close() }.recover { _ in } }
        connections.removeAll()
        let closes = channels.map { $0.close().recover { _ in } } + streams
        return EventLoopFuture.andAllComplete(closes, on: eventLoop)
    }

    /// Sends a request's bytes to `target`, opening a connection for TCP/TLS when there is none.
    func send(_ bytes: [UInt8], to target: SIPTarget) -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        switch target.transport {
        case .udp:
            guard let udp else { return eventLoop.makeFailedFuture(TransportError("the UDP socket is closed")) }
            return resolve(target).flatMap { address in
                udp.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: udp.allocator.buffer(bytes: bytes)))
            }
        case .tcp, .tls:
            return connection(to: target).flatMap { channel in channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)) }
        }
    }

    /// Sends a response's bytes back the way the request came.
    func send(_ bytes: [UInt8], to peer: SIPPeer) -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        if let connection = peer.connection {
            return connection.writeAndFlush(connection.allocator.buffer(bytes: bytes))
        }
        guard let udp else { return eventLoop.makeFailedFuture(TransportError("the UDP socket is closed")) }
        return udp.writeAndFlush(AddressedEnvelope(remoteAddress: peer.address, data: udp.allocator.buffer(bytes: bytes)))
    }

    private func connection(to target: SIPTarget) -> EventLoopFuture<any Channel> {
        let key = Self.key(target.transport, target.host, target.port)
        if let existing = connections[key] { return existing }
        let tls = target.transport == .tls ? clientTLS : nil
        if target.transport == .tls, tls == nil {
            return eventLoop.makeFailedFuture(TransportError("no tls: settings for a TLS connection to \(target)"))
        }
        let serverName = configuration.tls?.serverName(connectingTo: target.host)
        let future = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(10))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(StreamHandler(transport: self, kind: target.transport, key: key))
                }
            }
            .connect(host: target.host, port: target.port)
            .map { $0 as any Channel }
        connections[key] = future
        future.whenFailure { _ in self.connections[key] = nil }
        return future
    }

    private func resolve(_ target: SIPTarget) -> EventLoopFuture<SocketAddress> {
        let key = "\(target.host):\(target.port)"
        if let address = resolved[key] { return eventLoop.makeSucceededFuture(address) }
        if TLSSettings.isIPAddress(target.host) {
            do {
                let address = try SocketAddress(ipAddress: target.host, port: target.port)
                if resolved.count >= 256 { resolved.removeAll() }
                resolved[key] = address
                return eventLoop.makeSucceededFuture(address)
            } catch {
                return eventLoop.makeFailedFuture(error)
            }
        }
        // getaddrinfo blocks: off the event loop.
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) {
            try SocketAddress.makeAddressResolvingHost(target.host, port: target.port)
        }.map { address in
            // Envelopes may choose the hosts (send.allow_envelope_destination): a bounded cache.
            if self.resolved.count >= 256 { self.resolved.removeAll() }
            self.resolved[key] = address
            return address
        }
    }

    func connectionClosed(_ key: String) {
        connections[key] = nil
        delegate?.transport(closed: key)
    }

    func deliver(_ message: SIPMessage, from peer: SIPPeer) { delegate?.transport(received: message, from: peer) }

    func reject(_ bytes: [UInt8], _ error: SIPParseError, from peer: SIPPeer) {
        delegate?.transport(malformed: bytes, error: error, from: peer)
    }

    var limits: SIPLimits { configuration.limits.parser }

    /// The key of a stream connection.
    static func key(_ kind: SIPTransportKind, _ host: String, _ port: Int) -> String { "\(kind.rawValue):\(host):\(port)" }
}

/// A transport failure, with a message for the log.
struct TransportError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
