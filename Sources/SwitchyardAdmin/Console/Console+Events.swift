import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// How many live views are open: each holds a connection and a task, so there is a ceiling.
final class ConsoleStreams: Sendable {
    /// The most live views open at once, across all browsers.
    static let limit = 32

    private let open = Atomic<Int>(0)

    /// Takes a place; false when all are taken.
    func enter() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < Self.limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func leave() { open.subtract(1, ordering: .relaxed) }
}

extension Console {
    /// A server-sent event stream for a live view. `source` feeds it events (already in
    /// `event:`/`data:` form); every `tick` it sends what `onTick` gives (a heartbeat comment
    /// by default), which also finds a browser that has gone: a write to a closed connection
    /// ends the stream. It also ends when the request's session does, and when the server stops.
    func eventStream(
        for request: Request, tick: Duration, onTick: @escaping @Sendable () -> String = { ": ping\n\n" },
        source: (@Sendable (AsyncStream<String>.Continuation) async -> Void)? = nil
    ) -> Response {
        guard sessions.isSignedIn(request) else { return Response(status: .unauthorized) }
        guard streams.enter() else {
            return Response(status: .serviceUnavailable, headers: [.retryAfter: "30"])
        }
        let sessions = self.sessions
        let streams = self.streams
        var response = Response(
            status: .ok,
            body: ResponseBody { writer in
                defer { streams.leave() }
                let (merged, input) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(256))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    if let source { group.addTask { await source(input) } }
                    group.addTask {
                        while !Task.isCancelled {
                            input.yield(onTick())
                            try await Task.sleep(for: tick)
                        }
                    }
                    try await writer.write(ByteBuffer(string: ": connected\n\n"))
                    for await text in merged {
                        guard sessions.isSignedIn(request) else { break }
                        try await writer.write(ByteBuffer(string: text))
                    }
                    group.cancelAll()
                }
                try await writer.finish(nil)
            })
        response.headers[.contentType] = "text/event-stream"
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
