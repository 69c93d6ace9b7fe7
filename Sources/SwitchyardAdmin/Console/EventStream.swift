import Hummingbird
import NIOCore
import ServiceLifecycle

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
