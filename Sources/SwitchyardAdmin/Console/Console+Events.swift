import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle
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
    /// A server-sent event stream for a live view of a signed-in browser (see
    /// ``EventStream/response(tick:onTick:isOpen:source:)``); at most ``ConsoleStreams/limit``.
    func eventStream(
        for request: Request, tick: Duration, onTick: @escaping @Sendable () -> String = { ": ping\n\n" },
        source: (@Sendable (AsyncStream<String>.Continuation) async -> Void)? = nil
    ) -> Response {
        guard sessions.isSignedIn(request) else { return Response(status: .unauthorized) }
        guard streams.enter() else { return Response(status: .serviceUnavailable, headers: [.retryAfter: "30"]) }
        let sessions = self.sessions
        let streams = self.streams
        return EventStream.response(
            tick: tick, onTick: onTick, isOpen: { sessions.isSignedIn(request) }, onEnd: { streams.leave() }, source: source)
    }
}

/// Server-sent event responses: the console's live views and `/v1/tap`.
enum EventStream {
    /// A `text/event-stream` response. `source` feeds it events (already in `event:`/`data:`
    /// form) and may end it by finishing; every `tick` it sends what `onTick` gives (a
    /// heartbeat comment by default), which also finds a client that has gone: a write to a
    /// closed connection ends the stream. It ends as well when `isOpen` turns false and when
    /// the server stops; `onEnd` runs then.
    static func response(
        tick: Duration, onTick: @escaping @Sendable () -> String = { ": ping\n\n" }, isOpen: @escaping @Sendable () -> Bool = { true },
        onEnd: @escaping @Sendable () -> Void = {}, source: (@Sendable (AsyncStream<String>.Continuation) async -> Void)? = nil
    ) -> Response {
        var response = Response(
            status: .ok,
            body: ResponseBody { writer in
                defer { onEnd() }
                let (merged, input) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(256))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    if let source {
                        group.addTask {
                            await source(input)
                        }
                    }
                    group.addTask {
                        while !Task.isCancelled {
                            input.yield(onTick())
                            try await Task.sleep(for: tick)
                        }
                    }
                    try await writer.write(ByteBuffer(string: ": connected\n\n"))
                    // A graceful stop of the server ends the stream, so the stop need not cancel.
                    for await text in merged.cancelOnGracefulShutdown() {
                        guard isOpen() else { break }
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
