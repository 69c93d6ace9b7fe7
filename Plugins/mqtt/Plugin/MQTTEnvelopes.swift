import MQTTCodec
import SwitchyardCore
import SwitchyardPluginKit

/// How MQTT publishes and envelopes map onto each other.
enum MQTTEnvelopes {
    /// The envelope type of inbound publishes.
    static let messageType = "mqtt.Message"
    /// The envelope type a route builds to control topic, QoS and retain of a publish.
    static let publishType = "mqtt.Publish"
    /// The content type of a payload without a Content Type (MQTT 5) or Payload Format
    /// Indicator: bytes.
    static let untypedContentType = "application/octet-stream"

    /// An inbound publish as an `mqtt.Message` envelope: topic as subject, payload as body,
    /// flags and MQTT 5 properties as headers. With an MQTT Connect profile, a phone's payload
    /// is typed and its session object taken (see ``MQTTConnectProfile/inbound(_:)``).
    static func envelope(for publish: MQTTPublish, version: MQTTVersion, connect: MQTTConnectProfile? = nil) -> Envelope {
        var headers = Headers([
            ("mqtt.topic", publish.topic), ("mqtt.qos", String(publish.qos.rawValue)), ("mqtt.retain", String(publish.retain)),
            ("mqtt.dup", String(publish.dup)),
        ])
        let properties = publish.properties
        if version == .v5 {
            if let responseTopic = properties.responseTopic { headers.append(name: "mqtt.response_topic", value: responseTopic) }
            if let correlation = properties.correlationData { headers.append(name: "mqtt.correlation_data", value: hex(correlation)) }
            if let contentType = properties.contentType { headers.append(name: "mqtt.content_type", value: contentType) }
            if let expiry = properties.messageExpiryInterval { headers.append(name: "mqtt.message_expiry", value: String(expiry)) }
            if let format = properties.payloadFormatIndicator { headers.append(name: "mqtt.payload_format", value: String(format)) }
            for property in properties.userProperties {
                // W3C trace context travels as the envelope's own headers, which the router
                // continues and the sink plugins send on (see TraceContext).
                if property.name == TraceContext.parentHeader || property.name == TraceContext.stateHeader {
                    if headers[property.name] == nil { headers.append(name: property.name, value: property.value) }
                    continue
                }
                headers.append(name: "mqtt.user." + property.name, value: property.value)
            }
        }
        var envelope = Envelope(
            type: messageType,
            subject: publish.topic,
            headers: headers,
            contentType: properties.contentType
                ?? (properties.payloadFormatIndicator == 1 ? "text/plain; charset=utf-8" : untypedContentType),
            body: publish.payload
        )
        connect?.inbound(&envelope)  // MQTT Connect hook
        return envelope
    }

    /// The publish for an envelope delivered to the `publish` port. An `mqtt.Publish` body
    /// (`{topic, payload, qos, retain}`) decides everything it names; otherwise headers
    /// (`mqtt.topic`, `mqtt.qos`, `mqtt.retain`), then the instance's `publish:` defaults, then
    /// the envelope's subject. An `mqttconnect.DialogMessage` or `mqttconnect.Settings` goes to
    /// `publish.topic` first when the instance has one.
    static func publish(for envelope: Envelope, defaults: MQTTLinkConfiguration.PublishDefaults, version: MQTTVersion) throws -> MQTTPublish
    {
        let headers = PublishHeaders(envelope.headers)
        var (topic, qos, retain) = address(
            topic: headers.topic, qos: headers.qos, retain: headers.retain, subject: envelope.subject, defaults: defaults)
        // MQTT Connect hook: a dialog or settings message is for the phones' topic, the
        // instance's `publish.topic`; an `mqtt.topic` header it kept from the message that
        // triggered it names where that came from.
        if MQTTConnectProfile.outboundTypes.contains(envelope.type), let phones = defaults.topic { topic = phones }
        var payload = envelope.body
        if envelope.type == publishType {
            let body = envelope.decodedBody()
            if let value = body["topic"]?.stringValue { topic = value }
            switch body["payload"] {
            case .string(let text)?: payload = Array(text.utf8)
            case nil, .null?: payload = []
            case let value?: payload = value.serializedBytes()
            }
            if let value = body["qos"]?.intValue {
                guard let level = MQTTQoS(rawValue: UInt8(clamping: value)), value >= 0 else {
                    throw PluginError("mqtt.Publish qos must be 0, 1 or 2, not \(value)")
                }
                qos = level
            }
            if let value = body["retain"]?.boolValue { retain = value }
        }
        try check(topic: topic)
        var properties = MQTTProperties()
        if version == .v5 {
            // application/octet-stream is what a publish without a Content Type means (and what
            // an inbound one becomes): sending it would add 27 bytes to every forwarded publish.
            if envelope.type != publishType, !envelope.contentType.isEmpty, envelope.contentType != untypedContentType {
                properties.contentType = envelope.contentType
            }
            if let responseTopic = headers.responseTopic { properties.responseTopic = responseTopic }
            if let correlation = headers.correlationData.flatMap(bytes(hex:)) { properties.correlationData = correlation }
            if !headers.userProperties.isEmpty { properties.userProperties = headers.userProperties }
            if let format = headers.payloadFormat.flatMap(UInt8.init), format <= 1 { properties.payloadFormatIndicator = format }
            if let expiry = headers.messageExpiry.flatMap(UInt32.init) {
                // Forwarded as a broker forwards it: less the time it was held here.
                guard let remaining = remainingExpiry(expiry, since: envelope.time) else {
                    throw ExpiredMessage(interval: expiry, topic: topic)
                }
                properties.messageExpiryInterval = remaining
            }
        }
        return MQTTPublish(topic: topic, payload: payload, qos: qos, retain: retain, properties: properties)
    }

    /// The header names a publish is made from in place by ``publish(lent:defaults:version:)``:
    /// those an `mqtt.Message` relayed as it came carries.
    static let inPlaceHeaders = ["mqtt.topic", "mqtt.qos", "mqtt.retain", "mqtt.dup"]

    /// The publish ``publish(for:defaults:version:)`` makes of a copy of `envelope`, made from
    /// the lent envelope in place (only the topic and the payload are copied); nil when the
    /// envelope needs the general path: a header other than ``inPlaceHeaders`` (MQTT 5
    /// properties, trace context), an `mqtt.Publish` body to read, or an MQTT Connect type.
    static func publish(
        lent envelope: borrowing BorrowedEnvelope, defaults: MQTTLinkConfiguration.PublishDefaults, version: MQTTVersion
    ) throws -> MQTTPublish? {
        guard envelope.headersAreAll(in: inPlaceHeaders), !envelope.hasType(publishType),
            !envelope.hasType(anyOf: MQTTConnectProfile.outboundTypes)
        else { return nil }
        let (topic, qos, retain) = address(
            topic: envelope.header("mqtt.topic"), qos: envelope.header("mqtt.qos"), retain: envelope.header("mqtt.retain"),
            subject: envelope.subject, defaults: defaults)
        try check(topic: topic)
        var properties = MQTTProperties()
        if version == .v5, !envelope.hasContentType(""), !envelope.hasContentType(untypedContentType) {
            properties.contentType = envelope.contentType
        }
        let payload = envelope.withBody { Array($0) }
        return MQTTPublish(topic: topic, payload: payload, qos: qos, retain: retain, properties: properties)
    }

    /// Topic, QoS and retain of a publish, one rule for both paths: each from its
    /// `mqtt.topic`/`mqtt.qos`/`mqtt.retain` header text when it has one that reads, else the
    /// instance's `publish:` default; the topic last from the subject (read only then).
    private static func address(
        topic: String?, qos: String?, retain: String?, subject: @autoclosure () -> String,
        defaults: MQTTLinkConfiguration.PublishDefaults
    ) -> (topic: String, qos: MQTTQoS, retain: Bool) {
        (
            topic ?? defaults.topic ?? subject(), qos.flatMap(UInt8.init).flatMap(MQTTQoS.init(rawValue:)) ?? defaults.qos,
            retain.map { $0 == "true" } ?? defaults.retain
        )
    }

    private static func check(topic: String) throws {
        if let problem = MQTTTopic.problem(withTopicName: topic) {
            throw PluginError("cannot publish to topic '\(topic)': \(problem)")
        }
    }

    /// What is left of a Message Expiry Interval of `interval` seconds counted from `arrival`
    /// (nanoseconds since the epoch, the envelope's time); nil once it has run out.
    static func remainingExpiry(_ interval: UInt32, since arrival: Int64, now: Int64 = Clock.nowUnixNanos()) -> UInt32? {
        let held = max(0, now - arrival) / 1_000_000_000
        guard held < Int64(interval) else { return nil }
        return UInt32(Int64(interval) - held)
    }

    /// A publish whose Message Expiry Interval ran out while the router held it: not sent, as
    /// a broker does not send it either.
    struct ExpiredMessage: Error, CustomStringConvertible {
        var interval: UInt32
        var topic: String

        var description: String {
            "the message for '\(topic)' expired (its Message Expiry Interval of \(interval) s ran out while it was held)"
        }
    }

    /// The `mqtt.*` headers a publish takes, found in one pass over the envelope's headers
    /// (the first value of each name, as `Headers`' subscript gives it; user properties in order).
    private struct PublishHeaders {
        var topic: String?
        var qos: String?
        var retain: String?
        var responseTopic: String?
        var correlationData: String?
        var messageExpiry: String?
        var payloadFormat: String?
        var userProperties: [MQTTUserProperty] = []

        init(_ headers: Headers) {
            var parent: String?
            var state: String?
            for header in headers {
                guard header.name.hasPrefix("mqtt.") else {
                    // Literals, as in the switch below (see TraceContext for the names).
                    if header.name == "traceparent" {
                        parent = parent ?? header.value
                    } else if header.name == "tracestate" {
                        state = state ?? header.value
                    }
                    continue
                }
                switch header.name {
                case "mqtt.topic": topic = topic ?? header.value
                case "mqtt.qos": qos = qos ?? header.value
                case "mqtt.retain": retain = retain ?? header.value
                case "mqtt.response_topic": responseTopic = responseTopic ?? header.value
                case "mqtt.correlation_data": correlationData = correlationData ?? header.value
                case "mqtt.message_expiry": messageExpiry = messageExpiry ?? header.value
                case "mqtt.payload_format": payloadFormat = payloadFormat ?? header.value
                // (Literals: a pattern built with `+` would be built again for every header.)
                case "mqtt.user.traceparent", "mqtt.user.tracestate": break
                case let name where name.hasPrefix("mqtt.user."):
                    userProperties.append(MQTTUserProperty(name: String(name.dropFirst("mqtt.user.".count)), value: header.value))
                default: break
                }
            }
            // The envelope's trace context (the router's rewritten `traceparent`), when
            // well-formed, goes as the user properties of the same names, not the `mqtt.user.`
            // copies a relayed publish may still carry.
            if let parent, TraceContext.isValidParent(parent) {
                userProperties.append(MQTTUserProperty(name: TraceContext.parentHeader, value: parent))
                if let state, !state.isEmpty, TraceContext.isValidState(state) {
                    userProperties.append(MQTTUserProperty(name: TraceContext.stateHeader, value: state))
                }
            }
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let characters = Array(hex.utf8)
        guard characters.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < characters.count {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
