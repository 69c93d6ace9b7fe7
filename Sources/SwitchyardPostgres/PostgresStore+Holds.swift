import Foundation
public import Logging
import NIOCore
import PostgresNIO
public import SwitchyardStore

/// Holds on listeners as PostgreSQL session advisory locks: each hold has a connection of its
/// own, which asks for the lock and waits in the server (no polling) until the holder's
/// session ends. A holder killed outright loses its connection, and so the lock, at once. A
/// holder (or a waiter) cut off by the network is noticed by the server's TCP keepalives, which
/// each hold connection sets for its own session: its backend ends, and its lock is free,
/// within about 11 s.
extension PostgresStore: ListenerHolds {
    public func hold(
        _ name: String, granted: @escaping @Sendable () -> Void, lost: @escaping @Sendable () -> Void
    ) -> any ListenerHold {
        var configuration = connectionConfiguration
        // Waiting for the lock is one statement that lasts until the holder lets go. The
        // server probes the client after 5 s of silence, every 2 s, 3 times (and gives up on
        // unacknowledged sends after 10 s): a dead peer's session, and lock, end in ~11 s.
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", "0"), ("application_name", "switchyard hold"), ("tcp_keepalives_idle", "5"),
            ("tcp_keepalives_interval", "2"), ("tcp_keepalives_count", "3"), ("tcp_user_timeout", "10000"),
        ]
        let hold = PostgresListenerHold(
            name: name, key: Self.holdKey(of: name), configuration: configuration, eventLoop: Self.eventLoops.next(), logger: logger,
            location: location, granted: granted, lost: lost)
        hold.connect()
        return hold
    }

    /// The advisory lock of `name`: FNV-1a (64 bits) of `switchyard hold:NAME`, so that every
    /// build and every router computes the same key.
    static func holdKey(of name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "switchyard hold:\(name)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return Int64(bitPattern: hash)
    }
}

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
                            "error": .string(PostgresStore.describe(error)),
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

/// A store connection a watch or a hold keeps open, opened again after losses, until its owner
/// ends it. Confined to the owner's event loop (in a `NIOLoopBoundBox`).
struct KeptConnection {
    var connection: PostgresConnection?
    /// The periodic question that notices a connection dropped in silence.
    var keepAlive: RepeatedTask?
    /// Set once the owner is done (stopped, released, or the hold lost): nothing reconnects.
    var ended = false
    var retryDelay = ReconnectDelay()

    /// Ends it: the keep-alive stops and the connection closes.
    mutating func end() {
        ended = true
        keepAlive?.cancel()
        _ = connection?.closeConnection()
    }
}
