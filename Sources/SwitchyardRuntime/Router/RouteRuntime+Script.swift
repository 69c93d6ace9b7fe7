internal import SwitchyardCore
internal import SwitchyardScript

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
