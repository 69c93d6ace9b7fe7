import Foundation
public import Logging
import NIOCore
import NIOPosix
import PostgresNIO
internal import SwitchyardCore
public import SwitchyardStore

/// A store in a PostgreSQL database (`store.url`), which several routers share.
///
/// One connection, used by one caller at a time (the lock), opened again after the server or
/// the network dropped it; every exchange is bounded by ``timeout``. Calls block their thread:
/// they come from plugin threads, control threads and the admin port's worker threads, as the
/// SQLite store's do, never from an event loop of this store. (An OAuth refresh, a task, also
/// reads and writes its tokens here: it may hold a cooperative thread for that long.)
public final class PostgresStore: Sendable {
    /// The connection (nil until opened, or after it was dropped) and the id the next one gets.
    /// A call holds the lock for its whole exchange, so statements of one call (a transaction)
    /// never interleave with another's.
    private struct Session {
        var connection: PostgresConnection?
        var nextConnectionID = 0
    }

    private let session = Locked(Session())

    /// The database, its password left out.
    public let address: PostgresAddress
    let connectionConfiguration: PostgresConnection.Configuration
    private let eventLoop: any EventLoop
    let logger: Logger

    /// The longest one exchange (connecting, a statement, a transaction's statement) may take
    /// before the connection is closed and the call fails.
    static let timeout = TimeAmount.seconds(10)

    /// Connects to `url` and applies the pending migrations (under an advisory lock, so
    /// routers starting together apply each once). Throws, naming the database but never its
    /// password, when it cannot.
    public convenience init(url: String, logger: Logger) throws(StoreError) {
        try self.init(address: PostgresAddress(parsing: url), logger: logger)
        try migrate()
    }

    /// A store for `address`, not yet connected nor migrated (`switchyard store check`).
    public init(address: PostgresAddress, logger: Logger) throws(StoreError) {
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
        connectionConfiguration = configuration
        eventLoop = Self.eventLoops.next()
    }

    /// The stores' own event loop: a caller blocked on a store (a plugin's event loop, the
    /// admin port's) is never the loop its answer has to come through, so waiting on it can
    /// never deadlock or trip NIO's check. Lives as long as the process.
    static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    deinit { try? session.withLock { $0.connection }?.closeConnection().wait() }

    /// Where the state lives, for logs and errors.
    public var location: String { address.redacted }

    /// Runs `body` on the connection (opening it if needed) and waits, at most ``timeout``
    /// per exchange, for each answer. A connection the server or the network dropped is
    /// closed and forgotten, and the call is tried once more on a new one (a dropped
    /// connection's transaction was rolled back by the server) — unless the first try used
    /// up ``timeout``, so that no call holds the store much longer than that.
    func exchange<Result>(_ body: (_ run: (PostgresQuery) throws -> PostgresQueryResult) throws -> Result) throws(StoreError) -> Result {
        try session.withLock { session throws(StoreError) in
            let started = NIODeadline.now()
            var attempt = 0
            while true {
                attempt += 1
                do {
                    let connection = try connected(&session)
                    return try body { query in try self.wait(connection.query(query, logger: self.logger), closing: connection) }
                } catch {
                    // postgres-nio fails the pending query before it closes the channel, so a
                    // connection-level error says "dropped" before `isClosed` may.
                    let dropped = Self.isConnectionLevel(error) || session.connection.map(\.isClosed) ?? true
                    if dropped {
                        try? session.connection?.closeConnection().wait()
                        session.connection = nil
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

    /// `string` as a TEXT value: PostgreSQL refuses NUL in text, which a plugin's error or an
    /// envelope's subject may carry; it becomes U+FFFD rather than failing the whole write.
    static func text(_ string: String) -> String {
        string.utf8.contains(0) ? string.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : string
    }

    static func text(_ string: String?) -> String? { string.map { text($0) } }

    /// Whether `error` ended the connection rather than the statement.
    static func isConnectionLevel(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return error is ChannelError || error is IOError }
        return [.serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .connectionError].contains(error.code)
    }

    /// The open connection, or a new one.
    private func connected(_ session: inout Session) throws -> PostgresConnection {
        if let connection = session.connection, !connection.isClosed { return connection }
        session.nextConnectionID += 1
        let opened = try wait(
            PostgresConnection.connect(on: eventLoop, configuration: connectionConfiguration, id: session.nextConnectionID, logger: logger),
            closing: nil)
        session.connection = opened
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

extension PostgresConnection {
    /// Closes the connection (the future-returning `close()`, which a synchronous caller
    /// would otherwise find ambiguous beside the async one).
    func closeConnection() -> EventLoopFuture<Void> {
        let closing: EventLoopFuture<Void> = close()
        return closing
    }

    /// Asks the server something every `interval`, on `eventLoop`, and closes the connection
    /// when the answer fails or takes longer than `timeout`: a connection a firewall or NAT
    /// dropped in silence would otherwise never be noticed. Cancel the task to stop.
    func keepAlive(every interval: TimeAmount, answerWithin timeout: TimeAmount, on eventLoop: any EventLoop, logger: Logger)
        -> RepeatedTask
    {
        eventLoop.scheduleRepeatedAsyncTask(initialDelay: interval, delay: interval) { _ in
            let answer = self.query("SELECT 1", logger: logger).map { _ in () }
            let deadline = eventLoop.scheduleTask(in: timeout) { _ = self.closeConnection() }
            return answer.always { _ in deadline.cancel() }.recover { _ in _ = self.closeConnection() }
        }
    }
}
