import Logging
import NIOCore
import PostgresNIO

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
