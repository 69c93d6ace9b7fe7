import Logging
import NIOCore
import PostgresNIO
import SwitchyardStore

/// One router's claim on a hold: a connection waiting for, then holding, an advisory lock.
/// While it waits, a lost connection is opened again (after a second, then up to 30 s apart);
/// once it holds, it asks the server something every ``keepAliveInterval``, and a connection
/// that fails or does not answer is the end of the hold (`lost`).
final class PostgresListenerHold: ListenerHold, Sendable {
    /// The connection asking for or holding the lock (`ended`: released or lost), and whether
    /// it holds it; confined to `eventLoop` (checked at each access).
    private struct Claim {
        var kept = KeptConnection()
        var holding = false
    }

    private let claim: NIOLoopBoundBox<Claim>
    private let name: String
    private let key: Int64
    private let configuration: PostgresConnection.Configuration
    private let eventLoop: any EventLoop
    private let logger: Logger
    private let location: String
    private let granted: @Sendable () -> Void
    private let lost: @Sendable () -> Void

    /// How often a holder checks that its connection (and so its lock) is still there.
    static let keepAliveInterval = TimeAmount.seconds(5)

    init(
        name: String, key: Int64, configuration: PostgresConnection.Configuration, eventLoop: any EventLoop, logger: Logger,
        location: String, granted: @escaping @Sendable () -> Void, lost: @escaping @Sendable () -> Void
    ) {
        self.name = name
        self.key = key
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.logger = logger
        self.location = location
        self.granted = granted
        self.lost = lost
        claim = .makeBoxSendingValue(Claim(), as: Claim.self, eventLoop: eventLoop)
    }

    func release() {
        eventLoop.execute { self.claim.value.kept.end() }
    }

    func connect() {
        eventLoop.execute {
            guard !self.claim.value.kept.ended else { return }
            PostgresConnection.connect(on: self.eventLoop, configuration: self.configuration, id: 0, logger: self.logger).whenComplete {
                result in
                switch result {
                case .success(let connection): self.waitForLock(on: connection)
                case .failure(let error):
                    self.logger.warning(
                        "hold: cannot reach the store; trying again",
                        metadata: [
                            "instance": .string(self.name), "store": .string(self.location),
                            "error": .string(PostgresSession.describe(error)),
                        ])
                    self.retry()
                }
            }
        }
    }

    /// On `eventLoop`: asks for the lock; the answer comes when this router holds it.
    private func waitForLock(on connection: PostgresConnection) {
        guard !claim.value.kept.ended else {
            _ = connection.closeConnection()
            return
        }
        claim.value.kept.connection = connection
        connection.closeFuture.whenComplete { _ in self.closed(connection) }
        connection.query("SELECT pg_advisory_lock(\(key))", logger: logger).whenComplete { result in
            guard case .success = result else {
                _ = connection.closeConnection()  // closed() waits again on a new one
                return
            }
            guard !self.claim.value.kept.ended, self.claim.value.kept.connection === connection else { return }
            self.claim.value.holding = true
            self.claim.value.kept.retryDelay.reset()
            self.claim.value.kept.keepAlive = connection.keepAlive(
                every: Self.keepAliveInterval, answerWithin: Self.keepAliveInterval, on: self.eventLoop, logger: self.logger)
            self.granted()
        }
    }

    /// On `eventLoop`: the connection ended. A held lock may now be another router's.
    private func closed(_ connection: PostgresConnection) {
        guard claim.value.kept.connection === connection else { return }
        claim.value.kept.connection = nil
        claim.value.kept.keepAlive?.cancel()
        claim.value.kept.keepAlive = nil
        guard !claim.value.kept.ended else { return }
        if claim.value.holding {
            claim.value.holding = false
            claim.value.kept.ended = true
            logger.error(
                "hold: the connection holding the lock is gone", metadata: ["instance": .string(name), "store": .string(location)])
            lost()
        } else {
            retry()
        }
    }

    /// On `eventLoop`: the next attempt, later.
    private func retry() {
        eventLoop.scheduleTask(in: claim.value.kept.retryDelay.take()) { self.connect() }
    }
}
