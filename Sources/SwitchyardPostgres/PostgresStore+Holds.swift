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
final class PostgresListenerHold: ListenerHold, @unchecked Sendable {
    // `connection`, `keepAlive`, `released`, `holding` and `retryDelay` are only touched on
    // `eventLoop`.
    private var connection: PostgresConnection?
    private var keepAlive: RepeatedTask?
    private var released = false
    private var holding = false
    private var retryDelay = ReconnectDelay()
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
    }

    func release() {
        eventLoop.execute {
            self.released = true
            self.keepAlive?.cancel()
            _ = self.connection?.closeConnection()
        }
    }

    func connect() {
        eventLoop.execute {
            guard !self.released else { return }
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
        guard !released else {
            _ = connection.closeConnection()
            return
        }
        self.connection = connection
        connection.closeFuture.whenComplete { _ in self.closed(connection) }
        connection.query("SELECT pg_advisory_lock(\(key))", logger: logger).whenComplete { result in
            guard case .success = result else {
                _ = connection.closeConnection()  // closed() waits again on a new one
                return
            }
            guard !self.released, self.connection === connection else { return }
            self.holding = true
            self.retryDelay.reset()
            self.keepAlive = connection.keepAlive(
                every: Self.keepAliveInterval, answerWithin: Self.keepAliveInterval, on: self.eventLoop, logger: self.logger)
            self.granted()
        }
    }

    /// On `eventLoop`: the connection ended. A held lock may now be another router's.
    private func closed(_ connection: PostgresConnection) {
        guard self.connection === connection else { return }
        self.connection = nil
        keepAlive?.cancel()
        keepAlive = nil
        guard !released else { return }
        if holding {
            holding = false
            released = true
            logger.error(
                "hold: the connection holding the lock is gone", metadata: ["instance": .string(name), "store": .string(location)])
            lost()
        } else {
            retry()
        }
    }

    /// On `eventLoop`: the next attempt, later.
    private func retry() {
        eventLoop.scheduleTask(in: retryDelay.take()) { self.connect() }
    }
}
