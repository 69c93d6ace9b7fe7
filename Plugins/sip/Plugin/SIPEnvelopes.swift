import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// How SIP MESSAGE requests and envelopes map onto each other.
enum SIPEnvelopes {
    /// Incoming MESSAGE requests.
    static let messageType = "sip.Message"
    /// A route's way to say everything about an outgoing MESSAGE in the body.
    static let sendType = "sip.Send"
    /// Registration state changes.
    static let registrationType = "sip.Registration"
    /// What became of each MESSAGE the `send` port sent.
    static let outcomeType = "sip.Outcome"
    /// Registration on demand, delivered to the `control` port.
    static let controlType = "sip.Control"
    /// A change of the message history (`added`, `updated`, `removed`, `reset`).
    static let historyEventType = "sip.HistoryEvent"

    /// Headers that are the transaction's and the proxies' business, not the message's: not
    /// copied into envelopes, and not taken from them.
    static let protocolHeaders: Set<String> = [
        "via", "from", "to", "call-id", "cseq", "max-forwards", "content-length", "content-type", "route", "record-route",
        "authorization", "proxy-authorization", "www-authenticate", "proxy-authenticate", "contact", "expires", "allow",
        "accept", "supported", "require", "proxy-require", "user-agent", "server",
    ]

    /// The W3C trace context header fields, carried as the envelope's headers of the same
    /// names rather than as `sip.header.*`.
    static let traceContextHeaders = [TraceContext.parentHeader, TraceContext.stateHeader]

    /// An incoming MESSAGE as a `sip.Message` envelope: the body as it came, with its content
    /// type; the sender as subject; addresses and the other header fields as `sip.*` headers.
    static func envelope(for request: SIPMessage) -> Envelope {
        var headers = Headers()
        let from = request.headers["From"].flatMap(SIPAddress.init)
        let to = request.headers["To"].flatMap(SIPAddress.init)
        let fromURI = from?.uri ?? ""
        headers.append(name: "sip.from", value: fromURI)
        if let name = from?.displayName { headers.append(name: "sip.from_name", value: name) }
        headers.append(name: "sip.to", value: to?.uri ?? "")
        if case .request(_, let uri) = request.startLine { headers.append(name: "sip.request_uri", value: uri) }
        headers.append(name: "sip.call_id", value: request.headers["Call-ID"] ?? "")
        let contentType = request.headers["Content-Type"] ?? "text/plain"
        headers.append(name: "sip.content_type", value: contentType)
        for field in request.headers.fields {
            let lowercased = field.name.lowercased()
            guard !protocolHeaders.contains(lowercased) else { continue }
            // W3C trace context becomes the envelope's own headers (the router checks and
            // continues it); a longer value than trace context allows is not taken.
            if let traceHeader = traceContextHeaders.first(where: { lowercased == $0 }) {
                if headers[traceHeader] == nil, field.value.utf8.count <= TraceContext.maximumStateLength {
                    headers.append(name: traceHeader, value: field.value)
                }
                continue
            }
            headers.append(name: "sip.header." + field.name, value: field.value)
        }
        return Envelope(type: messageType, subject: fromURI, headers: headers, contentType: contentType, body: request.body)
    }

    /// Why an envelope on `send` is refused (delivery outcome reject), and the counter it adds to.
    struct Refusal: Error, Sendable {
        /// `messages_failed_total`, or a more specific counter as well for a hostile envelope.
        var counter: String?
        var message: String

        init(_ message: String, counter: String? = nil) {
            self.message = message
            self.counter = counter
        }
    }

    /// What the `send` port makes of an envelope.
    struct Outgoing: Sendable {
        /// The envelope's id, named in its `sip.Outcome`.
        var envelopeID: String
        var to: String
        var contentType: String
        var body: [UInt8]
        var headers: [(name: String, value: String)]
    }

    /// The MESSAGE for an envelope delivered to `send`. A `sip.Send` body (`{to, body,
    /// content_type, headers}`) decides what it names; then `sip.to`/`sip.content_type` headers,
    /// an iiidea action's `to`/`content_type` preferences, the instance's `send:` defaults. The
    /// body is the envelope's; `sip.header.NAME` headers become SIP header fields.
    ///
    /// With `send.to` configured, an envelope naming another destination is refused unless
    /// `send.allow_envelope_destination` is on: a route's input must not choose where the
    /// instance's identity (and credentials) go. A value holding CR, LF or NUL is refused, never written.
    static func outgoing(for envelope: Envelope, configuration: SIPConfiguration) throws(Refusal) -> Outgoing {
        let preferences = SIPSendPreferences(of: envelope)
        var to = envelope.headers["sip.to"] ?? preferences.to ?? configuration.defaultTo
        // A sip.Send envelope's own content type is that of the JSON describing the MESSAGE, not
        // the MESSAGE's: text in its `body` goes out with the instance's default (text/plain).
        let ownType = envelope.type == sendType ? "" : envelope.contentType
        var contentType =
            envelope.headers["sip.content_type"] ?? preferences.contentType
            ?? (ownType.isEmpty || ownType == "application/octet-stream" ? configuration.defaultContentType : ownType)
        var body = envelope.body
        var headers: [(name: String, value: String)] = envelope.headers.fields.compactMap { field in
            guard field.name.hasPrefix("sip.header.") else { return nil }
            let name = String(field.name.dropFirst("sip.header.".count))
            // The envelope's own trace context (below) is the current one, not a relayed copy.
            guard !traceContextHeaders.contains(name.lowercased()) else { return nil }
            return (name, field.value)
        }
        // Only a well-formed trace context: a malformed one must not fail the MESSAGE.
        if let context = TraceContext.outgoing(envelope.headers) {
            headers.append((TraceContext.parentHeader, context.parent))
            if let state = context.state { headers.append((TraceContext.stateHeader, state)) }
        }
        if envelope.type == sendType {
            let send = envelope.decodedBody()
            if let value = send["to"]?.stringValue { to = value }
            if let value = send["content_type"]?.stringValue { contentType = value }
            switch send["body"] {
            case .string(let text)?: body = Array(text.utf8)
            case nil, .null?: body = []
            case let value?:
                body = value.serializedBytes()
                if send["content_type"] == nil { contentType = "application/json" }
            }
            for (name, value) in send["headers"]?.objectValue ?? [:] {
                guard let text = value.stringValue else { throw Refusal("sip.Send headers.\(name) is not a string") }
                headers.append((name, text))
            }
        }
        guard let named = to else {
            throw Refusal("no destination: give a sip.to header, a sip.Send body with to, or send.to in the instance")
        }
        let destination = named.hasPrefix("<") ? String(named.dropFirst().prefix { $0 != ">" }) : named
        guard destination.lowercased().hasPrefix("sip:") || destination.lowercased().hasPrefix("sips:") else {
            throw Refusal("destination '\(escaped(destination))' is not a sip: or sips: URI")
        }
        // The URI goes into the Request-URI and into To as <URI>: no controls, spaces, quotes or brackets.
        guard !destination.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F || "<>\"".unicodeScalars.contains($0) })
        else {
            throw Refusal(
                "destination '\(escaped(destination))' holds a control character, a space, a quote or a bracket", counter: unsafeValue)
        }
        if let configured = configuration.defaultTo, !configuration.allowEnvelopeDestination {
            let own = configured.hasPrefix("<") ? String(configured.dropFirst().prefix { $0 != ">" }) : configured
            guard destination == own else {
                throw Refusal(
                    "the envelope names destination '\(escaped(destination))' but send.to is '\(own)' "
                        + "(set send.allow_envelope_destination: true to let envelopes choose)",
                    counter: "destinations_refused_total")
            }
        }
        guard !containsLineBreakOrNUL(contentType) else {
            throw Refusal("content type '\(escaped(contentType))' holds CR, LF or NUL", counter: unsafeValue)
        }
        for header in headers {
            guard !protocolHeaders.contains(header.name.lowercased()) else {
                throw Refusal("header \(escaped(header.name)) is set by the SIP stack, not by envelopes")
            }
            guard SIPParser.isToken(header.name) else {
                throw Refusal("header '\(escaped(header.name))' is not a valid SIP header field name", counter: unsafeValue)
            }
            guard !containsLineBreakOrNUL(header.value) else {
                throw Refusal("header \(header.name) holds CR, LF or NUL: '\(escaped(header.value))'", counter: unsafeValue)
            }
        }
        return Outgoing(envelopeID: envelope.id, to: destination, contentType: contentType, body: body, headers: headers)
    }

    /// The counter of values refused because they would break a header line.
    static let unsafeValue = "header_values_refused_total"

    /// Whether `value` holds a byte that would end or cut a header line.
    static func containsLineBreakOrNUL(_ value: String) -> Bool {
        value.utf8.contains { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") || $0 == 0 }
    }

    /// `value` for a log line: controls shown as `\u{..}`, at most 80 characters.
    static func escaped(_ value: String) -> String {
        String(
            value.prefix(80).unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
                .joined())
    }

    /// A registration state change as a `sip.Registration` envelope.
    /// The `sip.Outcome` of one MESSAGE sent for an envelope: `status` 0 when no answer came
    /// (Timer F, a transport failure), `outcome` what the router was told (`ok`, `retry`,
    /// `reject`), `attempts` how many MESSAGEs this instance has sent for the envelope.
    static func outcome(of outgoing: Outgoing, status: Int, reason: String, outcome: DeliveryOutcome, attempts: Int) -> Envelope {
        let word = outcome.word
        let body: JSONValue = [
            "envelope_id": .string(outgoing.envelopeID), "to": .string(outgoing.to), "status": .int(status), "reason": .string(reason),
            "outcome": .string(word), "attempts": .int(attempts),
        ]
        var envelope = Envelope(type: outcomeType, subject: outgoing.to, contentType: "application/json", body: body.serializedBytes())
        envelope.headers.append(name: "sip.envelope_id", value: outgoing.envelopeID)
        return envelope
    }

    static func registration(state: String, aor: String, contact: String, expires: Int?, reason: String?) -> Envelope {
        var body: [String: JSONValue] = ["state": .string(state), "aor": .string(aor), "contact": .string(contact)]
        if let expires { body["expires"] = .int(expires) }
        if let reason { body["reason"] = .string(reason) }
        return Envelope(
            type: registrationType, subject: aor, contentType: "application/json", body: JSONValue.object(body).serializedBytes())
    }
}

/// The preferences an iiidea gives `send` as its action (`action.preferences`, rendered over
/// the service's output): the destination and the content type, in place of the instance's
/// `send:` defaults. The `send` port's preference schema is derived from this type, so what
/// the router checks and what `send` reads cannot disagree.
struct SIPSendPreferences: PluginConfiguration {
    static let descriptions = [
        "/to": "Where the MESSAGE goes: a sip: or sips: URI (may insert the service's output, as {{body.to}})",
        "/content_type": "The MESSAGE's content type, such as text/plain",
    ]

    /// The destination.
    var to: String?
    /// The content type.
    var contentType: String?

    init(to: String? = nil, contentType: String? = nil) {
        self.to = to
        self.contentType = contentType
    }

    /// The preferences `envelope` carries in its `iiidea.preferences` header; none when it has
    /// none or they are not these preferences.
    init(of envelope: Envelope) {
        self = Self(iiideaPreferencesOf: envelope) ?? Self()
    }
}

extension DeliveryOutcome {
    /// `ok`, `retry` or `reject`, as `sip.Outcome` and the history say it.
    var word: String {
        switch self {
        case .ok: "ok"
        case .retry: "retry"
        case .reject: "reject"
        }
    }
}
