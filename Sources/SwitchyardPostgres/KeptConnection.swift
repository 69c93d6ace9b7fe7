import NIOCore
import PostgresNIO

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
