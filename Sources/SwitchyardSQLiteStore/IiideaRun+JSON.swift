public import SwitchyardCore
public import SwitchyardStore

extension IiideaRun {
    /// The run as the API and the CLI print it.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "run_id": .string(id), "iiidea": .string(iiidea), "trigger_envelope_id": .string(triggerEnvelopeID),
            "started_at": .string(Clock.rfc3339(unixNanos: startedAt)),
        ]
        if let endedAt { object["ended_at"] = .string(Clock.rfc3339(unixNanos: endedAt)) }
        if let endedPiece { object["ended_piece"] = .string(endedPiece.rawValue) }
        if let output { object["output"] = (try? JSONValue(parsing: Array(output.utf8))) ?? .string(output) }
        if let error { object["error"] = .string(error) }
        if let input { object["input"] = (try? JSONValue(parsing: Array(input.utf8))) ?? .string(input) }
        object["outcome"] = .string(outcome.rawValue)
        if let endedAt { object["duration_ms"] = .double(Double(endedAt - startedAt) / 1e6) }
        return .object(object)
    }
}
