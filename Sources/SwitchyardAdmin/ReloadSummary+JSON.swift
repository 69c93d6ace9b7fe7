import SwitchyardCore
import SwitchyardRuntime

extension SwitchyardRuntime.Router.ReloadSummary {
    /// The summary as the admin API and `switchyard reload --json` show it:
    /// `{"outcome": "applied"|"rejected"|"rolled_back", "reason": "…" (unless applied),
    /// "instances": {"kept", "reconfigured", "started", "stopped"}, "routes": {"kept", "started", "retired"}}`,
    /// each list of names.
    var json: JSONValue {
        func names(_ list: [String]) -> JSONValue { .array(list.map { .string($0) }) }
        var object: [String: JSONValue] = [
            "outcome": .string(outcome.rawValue),
            "instances": .object([
                "kept": names(keptInstances), "reconfigured": names(reconfiguredInstances), "started": names(startedInstances),
                "stopped": names(stoppedInstances),
            ]),
            "routes": .object(["kept": names(keptRoutes), "started": names(startedRoutes), "retired": names(retiredRoutes)]),
        ]
        if let reason { object["reason"] = .string(reason) }
        if !skippedIiideas.isEmpty { object["skipped_iiideas"] = .object(skippedIiideas.mapValues { .string($0) }) }
        return .object(object)
    }
}
