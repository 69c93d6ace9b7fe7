import Logging
import NIOCore
import PostgresNIO

/// A connection that LISTENs for what other routers change in the shared store (iiidea
/// switches, obtained iiideas and preferences, OAuth tokens), opened again (after a second,
/// then up to 30 s apart) whenever it is lost, until stopped. Each time it listens, everything
/// is read again, since notices may have been missed. It asks the server something every
/// ``keepAliveInterval``: a connection a firewall or NAT dropped in silence would otherwise
/// never be noticed, and the router would stop following without a word.
public final class IiideaSwitchWatch: Sendable {
    /// The listening connection, confined to `eventLoop` (checked at each access).
    private let listening: NIOLoopBoundBox<KeptConnection>
    private let configuration: PostgresConnection.Configuration
    private let eventLoop: any EventLoop
    private let logger: Logger
    private let location: String
    private let onChange: @Sendable (String?) -> Void
    private let onCatalogChange: @Sendable () -> Void
    private let onOAuthChange: @Sendable (String?) -> Void

    static let keepAliveInterval = TimeAmount.seconds(30)

    init(
        configuration: PostgresConnection.Configuration, eventLoop: any EventLoop, logger: Logger, location: String,
        onChange: @escaping @Sendable (String?) -> Void, onCatalogChange: @escaping @Sendable () -> Void,
        onOAuthChange: @escaping @Sendable (String?) -> Void
    ) {
        self.onCatalogChange = onCatalogChange
        self.onOAuthChange = onOAuthChange
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
        self.location = location
        self.onChange = onChange
        listening = .makeBoxSendingValue(KeptConnection(), as: KeptConnection.self, eventLoop: eventLoop)
    }

    /// Ends the watch and closes its connection.
    public func stop() {
        eventLoop.execute { self.listening.value.end() }
    }

    func connect() {
        eventLoop.execute {
            guard !self.listening.value.ended else { return }
            PostgresConnection.connect(on: self.eventLoop, configuration: self.configuration, id: 0, logger: self.logger)
                .flatMap { connection -> EventLoopFuture<PostgresConnection> in
                    connection.addListener(channel: PostgresIiideaSwitches.channel) { _, notification in
                        self.onChange(notification.payload)
                    }
                    connection.addListener(channel: PostgresIiideaCatalog.channel) { _, _ in self.onCatalogChange() }
                    connection.addListener(channel: PostgresOAuthTokens.channel) { _, notification in
                        self.onOAuthChange(notification.payload)
                    }
                    return connection.query("LISTEN \(unescaped: PostgresIiideaSwitches.channel)", logger: self.logger)
                        .flatMap { _ in connection.query("LISTEN \(unescaped: PostgresIiideaCatalog.channel)", logger: self.logger) }
                        .flatMap { _ in connection.query("LISTEN \(unescaped: PostgresOAuthTokens.channel)", logger: self.logger) }
                        .map { _ in connection }
                        .flatMapError { error in
                            // Not listening: this connection is of no use (and must not keep its listener).
                            connection.closeConnection().flatMapThrowing { throw error }
                        }
                }
                .whenComplete { result in
                    switch result {
                    case .success(let connection): self.listen(on: connection)
                    case .failure(let error):
                        self.logger.warning(
                            "store watch: cannot listen; trying again",
                            metadata: ["store": .string(self.location), "error": .string(PostgresSession.describe(error))])
                        self.retry()
                    }
                }
        }
    }

    /// On `eventLoop`: the connection listens.
    private func listen(on connection: PostgresConnection) {
        guard !listening.value.ended else {
            _ = connection.closeConnection()
            return
        }
        listening.value.connection = connection
        listening.value.retryDelay.reset()
        // What changed before this connection listened (while the router started, or while
        // no connection was open) is read again.
        // Also on the first: the router loaded its graph and tokens before this connection
        // listened, and another router may have changed them meanwhile (a reload that finds
        // nothing changed keeps everything).
        onChange(nil)
        onCatalogChange()
        onOAuthChange(nil)
        listening.value.keepAlive = connection.keepAlive(
            every: Self.keepAliveInterval, answerWithin: PostgresSession.timeout, on: eventLoop, logger: logger)
        connection.closeFuture.whenComplete { _ in
            self.listening.value.keepAlive?.cancel()
            self.listening.value.keepAlive = nil
            self.listening.value.connection = nil
            guard !self.listening.value.ended else { return }
            self.logger.warning(
                "store watch: the listening connection was lost; listening again", metadata: ["store": .string(self.location)])
            self.retry()
        }
    }

    /// On `eventLoop`: the next attempt, later.
    private func retry() {
        eventLoop.scheduleTask(in: listening.value.retryDelay.take()) { self.connect() }
    }
}
