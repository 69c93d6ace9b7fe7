internal import SwitchyardCore
internal import SwitchyardScript

/// What a route makes of one envelope.
enum RouteOutcome {
    /// `when:` rejected it, or the script dropped it (counted as filtered).
    case filtered
    /// One envelope to send: the common case, with no array.
    case one(Envelope)
    /// Several (a script that emitted more than one), in order.
    case many([Envelope])
    /// The script failed: the envelope takes the route's failure path (dropped and counted on
    /// an at-most-once route, a dead letter on an at-least-once one).
    case failed(ScriptFailure)
}

extension RouteRuntime {
    /// The script stage's answer for `envelope` as the route's outcome: what it sends tapped,
    /// nothing sent counted as filtered.
    func scriptOutcome(_ stage: RouteScriptStage, on envelope: Envelope) -> RouteOutcome {
        switch stage.run(envelope) {
        case .failure(let failure): return .failed(failure)
        case .success(let outputs):
            if tap.isActive { for output in outputs { tap.publish(output) } }
            switch outputs.count {
            case 0:
                counters.filtered.add(1, ordering: .relaxed)
                return .filtered
            case 1: return .one(outputs[0])
            default: return .many(outputs)
            }
        }
    }
}
