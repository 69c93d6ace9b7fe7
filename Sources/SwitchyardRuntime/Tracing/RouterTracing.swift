public import Logging
internal import SwitchyardABI
internal import SwitchyardCore
import Synchronization
public import Tracing

/// The router's spans, when tracing is configured (issue 23): one per hop of an envelope.
///
/// - `receive <instance.port>` (consumer): the source's emit, a child of the `traceparent`
///   the source plugin took from its protocol (MQTT 5 user property, HTTP or SIP header) or
///   the root of a new trace;
/// - `route <name>` (internal): the route's `when:` and transform, when its worker takes the
///   envelope (the gap after `receive` is the time it queued);
/// - `deliver <instance.port>` (producer): from the hand-over to the sink until the sink
///   acknowledges it, failed deliveries marked as errors.
///
/// Each span's context replaces the envelope's `traceparent` (and `tracestate`) before the next
/// hop, so the sink plugin sends on a `traceparent` whose parent is the router's delivery.
/// With tracing off the router holds no ``RouterTracing`` and each hook is one branch.
public final class RouterTracing: Sendable {
    /// The tracer the spans come from (swift-otel's, or a test's).
    let tracer: any Tracer
    let logger: Logger
    /// Delivery spans waiting for the sink's acknowledgement, by delivery id.
    private let openDeliveries = Mutex<[UInt64: any Span]>([:])
    /// Malformed `traceparent`/`tracestate` headers ignored so far.
    let malformedContexts = Atomic<Int>(0)

    /// Delivery spans kept waiting for their acknowledgement at most: beyond, a delivery's span
    /// ends when the sink takes it, so a sink that never acknowledges cannot grow the table.
    static let maximumOpenDeliveries = 65_536

    /// Tracing through `tracer`; `logger` gets the one line about malformed trace contexts.
    public init(tracer: any Tracer, logger: Logger) {
        self.tracer = tracer
        self.logger = logger
    }

    /// Delivery spans still waiting for an acknowledgement (for tests and shutdown logs).
    public var openDeliveryCount: Int { openDeliveries.withLock { $0.count } }

    // MARK: Hops

    /// Starts the `receive` span of an envelope emitted on `port` and makes it the envelope's
    /// parent. A malformed incoming context is removed (counted, logged once): the envelope
    /// starts a new trace.
    func received(_ envelope: inout Envelope, on port: String) -> any Span {
        let parent = trustedContext(&envelope, at: port)
        let span = tracer.startSpan("receive " + port, context: parent, ofKind: .consumer)
        if span.isRecording {
            span.attributes["switchyard.port"] = port
            span.attributes["switchyard.envelope.id"] = envelope.id
            span.attributes["switchyard.envelope.type"] = envelope.type
        }
        inject(span, into: &envelope)
        return span
    }

    /// Ends the `receive` span with the emit's answer: refused (`full`) is an error.
    func emitted(_ span: any Span, status: Int32) {
        if status != SY_OK { span.setStatus(SpanStatus(code: .error, message: "emit refused (status \(status))")) }
        span.end()
    }

    /// Runs `body` (the route's condition and transform) in a `route` span and makes that span
    /// the parent of what it outputs.
    func routed(_ envelope: Envelope, route: String, _ body: (Envelope) -> RouteOutcome) -> RouteOutcome {
        var input = envelope
        let parent = trustedContext(&input, at: "route " + route)
        let span = tracer.startSpan("route " + route, context: parent, ofKind: .internal)
        defer { span.end() }
        if span.isRecording { span.attributes["switchyard.route"] = route }
        switch body(input) {
        case .filtered:
            if span.isRecording { span.attributes["switchyard.filtered"] = true }
            return .filtered
        case .failed(let failure):
            if span.isRecording { span.attributes["switchyard.script_error"] = failure.message }
            return .failed(failure)
        case .one(var output):
            inject(span, into: &output)
            return .one(output)
        case .many(var outputs):
            for index in outputs.indices { inject(span, into: &outputs[index]) }
            return .many(outputs)
        }
    }

    /// Hands `envelope` to `sink` in a `deliver` span that ends with the sink's acknowledgement
    /// (``acknowledged(_:outcome:reason:)``); the envelope the sink sees names that span as
    /// parent. A delivery the sink refused as full keeps its span for the next try (the same
    /// delivery id).
    func deliver(_ envelope: Envelope, route: String, to sink: SinkPort, deliveryID: UInt64) -> Int32 {
        let (span, tracked) = deliverySpan(for: envelope, route: route, sink: sink, deliveryID: deliveryID)
        var delivered = envelope
        inject(span, into: &delivered)
        let status = sink.instance.deliver(delivered, port: sink, deliveryID: deliveryID)
        if status == SY_OK {
            if !tracked { span.end() }
            return status
        }
        // Full (or stopped while its instance runs): the route tries again with this id.
        let triedAgain = (status == SY_ERR_FULL || status == SY_ERR_STOPPED) && sink.instance.accepting.load(ordering: .relaxed)
        if triedAgain, tracked { return status }
        if tracked { openDeliveries.withLock { _ = $0.removeValue(forKey: deliveryID) } }
        if !triedAgain { span.setStatus(SpanStatus(code: .error, message: "refused by the sink (status \(status))")) }
        span.end()
        return status
    }

    /// Ends the `deliver` span of `deliveryID` with the sink's outcome.
    func acknowledged(_ deliveryID: UInt64, outcome: Int32, reason: sy_bytes) {
        guard let span = openDeliveries.withLock({ $0.removeValue(forKey: deliveryID) }) else { return }
        if outcome != SY_OUTCOME_OK {
            let verdict = outcome == SY_OUTCOME_RETRY ? "retry" : "reject"
            // The reason is the plugin's text: bounded before it goes into an export.
            span.setStatus(SpanStatus(code: .error, message: verdict + ": " + String(reason.string.prefix(256))))
        }
        span.end()
    }

    /// The open span of a delivery tried before, or a new one (kept for the acknowledgement
    /// unless too many are open).
    private func deliverySpan(for envelope: Envelope, route: String, sink: SinkPort, deliveryID: UInt64) -> (any Span, tracked: Bool) {
        if let open = openDeliveries.withLock({ $0[deliveryID] }) { return (open, true) }
        var input = envelope
        let parent = trustedContext(&input, at: sink.qualifiedName)
        let span = tracer.startSpan("deliver " + sink.qualifiedName, context: parent, ofKind: .producer)
        if span.isRecording {
            span.attributes["switchyard.route"] = route
            span.attributes["switchyard.sink"] = sink.qualifiedName
            span.attributes["switchyard.envelope.id"] = envelope.id
        }
        let tracked = openDeliveries.withLock { open in
            guard open.count < Self.maximumOpenDeliveries else { return false }
            open[deliveryID] = span
            return true
        }
        return (span, tracked)
    }

    // MARK: Context in headers

    /// The context `envelope`'s headers carry, after dropping a malformed `traceparent` (with
    /// its `tracestate`) or a malformed `tracestate`.
    private func trustedContext(_ envelope: inout Envelope, at place: String) -> InstrumentationContext {
        var context = InstrumentationContext.topLevel
        guard let parent = envelope.headers[TraceContext.parentHeader] else { return context }
        guard TraceContext.isValidParent(parent) else {
            envelope.headers[TraceContext.parentHeader] = nil
            envelope.headers[TraceContext.stateHeader] = nil
            reportMalformed(TraceContext.parentHeader, at: place)
            return context
        }
        if let state = envelope.headers[TraceContext.stateHeader], !TraceContext.isValidState(state) {
            envelope.headers[TraceContext.stateHeader] = nil
            reportMalformed(TraceContext.stateHeader, at: place)
        }
        tracer.extract(envelope.headers, into: &context, using: HeadersExtractor())
        return context
    }

    /// Writes `span`'s context into `envelope`'s `traceparent` and `tracestate`.
    private func inject(_ span: any Span, into envelope: inout Envelope) {
        tracer.inject(span.context, into: &envelope.headers, using: HeadersInjector())
    }

    /// Counts a malformed header; the first one gets a line (a peer sending garbage would
    /// otherwise flood the log), later ones are in the count.
    private func reportMalformed(_ header: String, at place: String) {
        let count = malformedContexts.add(1, ordering: .relaxed).newValue
        if count == 1 {
            logger.warning(
                "malformed \(header) ignored: the envelope starts a new trace (later ones are counted, not logged)",
                metadata: ["at": .string(place)])
        }
    }
}

/// Reads trace headers from envelope headers.
struct HeadersExtractor: Extractor {
    func extract(key: String, from carrier: Headers) -> String? { carrier[key] }
}

/// Writes trace headers into envelope headers, replacing any of the same name.
struct HeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout Headers) { carrier[key] = value }
}
