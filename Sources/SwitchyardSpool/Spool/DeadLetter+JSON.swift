public import SwitchyardCore
public import SwitchyardStore

extension DeadLetter {
    /// The dead letter as the API and `switchyard dlq` print it.
    public func json(withEnvelope: Bool) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .int(Int(id)), "route": .string(route), "sink": .string(sink), "envelope_id": .string(envelopeID), "type": .string(type),
            "subject": .string(subject), "attempts": .int(attempts), "error": .string(error),
            "failed_at": .string(Clock.rfc3339(unixNanos: failedAt)),
        ]
        if withEnvelope { object["envelope"] = (try? Envelope(serialized: envelope))?.jsonObject() ?? .null }
        return .object(object)
    }
}
