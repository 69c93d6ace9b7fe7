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

    /// Headers that are the transaction's and the proxies' business, not the message's: not
    /// copied into envelopes, and not taken from them.
    static let protocolHeaders: Set<String> = [
        "via", "from", "to", "call-id", "cseq", "max-forwards", "content-length", "content-type", "route", "record-route",
        "authorization", "proxy-authorization", "www-authenticate", "proxy-authenticate", "contact", "expires", "allow",
        "accept", "supported", "require", "proxy-require", "user-agent", "server",
    ]

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
        for field in request.headers.fields where !protocolHeaders.contains(field.name.lowercased()) {
            headers.append(name: "sip.header." + field.name, value: field.value)
        }
        return Envelope(type: messageType, subject: fromURI, headers: headers, contentType: contentType, body: request.body)
    }

    /// What the `send` port makes of an envelope.
    struct Outgoing: Sendable {
        var to: String
        var contentType: String
        var body: [UInt8]
        var headers: [(name: String, value: String)]
    }

    /// The MESSAGE for an envelope delivered to `send`. A `sip.Send` body (`{to, body,
    /// content_type, headers}`) decides what it names; then `sip.to`/`sip.content_type` headers,
    /// an iiidea action's `to`/`content_type` preferences, the instance's `send:` defaults. The
    /// body is the envelope's; `sip.header.NAME` headers become SIP header fields.
    static func outgoing(for envelope: Envelope, configuration: SIPConfiguration) throws(PluginError) -> Outgoing {
        let preferences = envelope.headers["iiidea.preferences"].flatMap { try? JSONValue(parsing: $0) }
        var to = envelope.headers["sip.to"] ?? preferences?["to"]?.stringValue ?? configuration.defaultTo
        var contentType =
            envelope.headers["sip.content_type"] ?? preferences?["content_type"]?.stringValue
            ?? (envelope.contentType.isEmpty || envelope.contentType == "application/octet-stream"
                ? configuration.defaultContentType : envelope.contentType)
        var body = envelope.body
        var headers: [(name: String, value: String)] = envelope.headers.fields.compactMap { field in
            guard field.name.hasPrefix("sip.header.") else { return nil }
            return (String(field.name.dropFirst("sip.header.".count)), field.value)
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
                guard let text = value.stringValue else { throw PluginError("sip.Send headers.\(name) is not a string") }
                headers.append((name, text))
            }
        }
        guard let to else {
            throw PluginError("no destination: give a sip.to header, a sip.Send body with to, or send.to in the instance")
        }
        guard to.lowercased().hasPrefix("sip:") || to.lowercased().hasPrefix("sips:") || to.hasPrefix("<") else {
            throw PluginError("destination '\(to)' is not a sip: or sips: URI")
        }
        for header in headers {
            guard !protocolHeaders.contains(header.name.lowercased()) else {
                throw PluginError("header \(header.name) is set by the SIP stack, not by envelopes")
            }
            guard !header.name.isEmpty, header.name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }),
                !header.value.contains(where: { $0 == "\r" || $0 == "\n" })
            else { throw PluginError("header '\(header.name)' is not a valid SIP header field") }
        }
        return Outgoing(
            to: to.hasPrefix("<") ? String(to.dropFirst().prefix { $0 != ">" }) : to, contentType: contentType, body: body, headers: headers
        )
    }

    /// A registration state change as a `sip.Registration` envelope.
    static func registration(state: String, aor: String, contact: String, expires: Int?, reason: String?) -> Envelope {
        var body: [String: JSONValue] = ["state": .string(state), "aor": .string(aor), "contact": .string(contact)]
        if let expires { body["expires"] = .int(expires) }
        if let reason { body["reason"] = .string(reason) }
        return Envelope(
            type: registrationType, subject: aor, contentType: "application/json", body: JSONValue.object(body).serializedBytes())
    }
}
