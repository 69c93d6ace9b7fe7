import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
internal import SwitchyardCore
import SwitchyardStore

/// The one connection a ``PostgresStore`` asks its questions on, opened again after the server
/// or the network dropped it; every exchange is bounded by ``timeout``. It owns the connection
/// and the lock around it, apart from the tables that use it, so that every table's calls go
/// through one place that knows how to connect, wait, retry and word an error.
///
/// Calls block their thread: they come from plugin threads, control threads and the admin
/// port's worker threads, as the SQLite store's do, never from an event loop of this store. (An
/// OAuth refresh, a task, also reads and writes its tokens here: it may hold a cooperative thread
/// for that long.)
final class PostgresSession: Sendable {
    /// The connection (nil until opened, or after it was dropped) and the id the next one gets.
    /// A call holds the lock for its whole exchange, so statements of one call (a transaction)
    /// never interleave with another's.
    private struct Current {
        var connection: PostgresConnection?
        var nextConnectionID = 0
    }

    private let current = Locked(Current())

    /// The database, its password left out.
    let address: PostgresAddress
    /// How every connection to the database is made; the watch and the holds start from it.
    let configuration: PostgresConnection.Configuration
    private let eventLoop: any EventLoop
    let logger: Logger

    /// The longest one exchange (connecting, a statement, a transaction's statement) may take
    /// before the connection is closed and the call fails.
    static let timeout = TimeAmount.seconds(10)

    /// The stores' own event loop: a caller blocked on a store (a plugin's event loop, the
    /// admin port's) is never the loop its answer has to come through, so waiting on it can
    /// never deadlock or trip NIO's check. Lives as long as the process.
    static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// A session with `address`, not yet connected (it connects on the first exchange).
    init(address: PostgresAddress, logger: Logger) throws(StoreError) {
        self.address = address
        self.logger = logger
        let tls: PostgresConnection.Configuration.TLS
        do {
            // As libpq: `prefer` and `require` encrypt without checking the certificate (a
            // stock server has a self-signed one); `verify-full` checks it and the host name.
            var unverified = TLSConfiguration.makeClientConfiguration()
            unverified.certificateVerification = .none
            switch address.tls {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: unverified))
            case .require: tls = .require(try NIOSSLContext(configuration: unverified))
            case .verifyFull: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            throw StoreError(location: address.redacted, detail: "TLS: \(error)")
        }
        var configuration = PostgresConnection.Configuration(
            host: address.host, port: address.port, username: address.user, password: address.password, database: address.database,
            tls: tls)
        configuration.options.connectTimeout = Self.timeout
        // The server ends a statement that runs longer than a call may wait for it.
        configuration.options.additionalStartupParameters = [("statement_timeout", "10000"), ("application_name", "switchyard")]
        self.configuration = configuration
        eventLoop = Self.eventLoops.next()
    }

    deinit { try? current.withLock { $0.connection }?.closeConnection().wait() }

    /// Where the state lives, for logs and errors.
    var location: String { address.redacted }

    /// Runs `body` on the connection (opening it if needed) and waits, at most ``timeout``
    /// per exchange, for each answer. A connection the server or the network dropped is
    /// closed and forgotten, and the call is tried once more on a new one (a dropped
    /// connection's transaction was rolled back by the server) — unless the first try used
    /// up ``timeout``, so that no call holds the store much longer than that.
    func exchange<Result>(_ body: (_ run: (PostgresQuery) throws -> PostgresQueryResult) throws -> Result) throws(StoreError) -> Result {
        try current.withLock { current throws(StoreError) in
            let started = NIODeadline.now()
            var attempt = 0
            while true {
                attempt += 1
                do {
                    let connection = try connected(&current)
                    return try body { query in try self.wait(connection.query(query, logger: self.logger), closing: connection) }
                } catch {
                    // postgres-nio fails the pending query before it closes the channel, so a
                    // connection-level error says "dropped" before `isClosed` may.
                    let dropped = Self.isConnectionLevel(error) || current.connection.map(\.isClosed) ?? true
                    if dropped {
                        try? current.connection?.closeConnection().wait()
                        current.connection = nil
                    }
                    if dropped, attempt < 2, NIODeadline.now() - started < Self.timeout { continue }
                    throw StoreError(location: location, detail: Self.describe(error))
                }
            }
        }
    }

    /// ``exchange(_:)`` inside one transaction: committed when `body` returns, rolled back
    /// when it throws.
    func inTransaction<Result>(_ body: (_ run: (PostgresQuery) throws -> PostgresQueryResult) throws -> Result) throws(StoreError)
        -> Result
    {
        try exchange { run in
            try withoutActuallyEscaping(run) { run in
                _ = try run("BEGIN")
                do {
                    let result = try body(run)
                    _ = try run("COMMIT")
                    return result
                } catch {
                    _ = try? run("ROLLBACK")
                    throw error
                }
            }
        }
    }

    /// Whether `error` ended the connection rather than the statement.
    ///
    /// A backend that an administrator or a restart ends (`pg_terminate_backend`, a fast
    /// shutdown) answers the statement in flight with a FATAL error of class 57P before it
    /// closes: that answer can arrive before the connection reads as closed.
    static func isConnectionLevel(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return error is ChannelError || error is IOError }
        if let state = error.serverInfo?[.sqlState], state.hasPrefix("57P") { return true }
        return [.serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .connectionError].contains(error.code)
    }

    /// The open connection, or a new one.
    private func connected(_ current: inout Current) throws -> PostgresConnection {
        if let connection = current.connection, !connection.isClosed { return connection }
        current.nextConnectionID += 1
        let opened = try wait(
            PostgresConnection.connect(on: eventLoop, configuration: configuration, id: current.nextConnectionID, logger: logger),
            closing: nil)
        current.connection = opened
        return opened
    }

    /// Waits for `future`; past ``timeout`` closes `connection` (ending the exchange with an
    /// error) so no caller waits longer.
    private func wait<Value: Sendable>(_ future: EventLoopFuture<Value>, closing connection: PostgresConnection?) throws -> Value {
        let deadline = eventLoop.scheduleTask(in: Self.timeout) { _ = connection?.closeConnection() }
        defer { deadline.cancel() }
        return try future.wait()
    }

    /// What went wrong, from the server's message where there is one (never the query's
    /// values, which may be a plugin's secrets).
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo {
            let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            return (info[.message] ?? "the server refused the statement") + state
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }
}
