extension Router {
    /// What a reload did (the name the router's callers use).
    public typealias ReloadSummary = SwitchyardRuntime.ReloadSummary
}

/// What a reload did: which instances it kept, reconfigured in place, started and stopped,
/// which routes it kept, started and retired, and whether it was applied, rejected (nothing
/// changed) or rolled back (the previous graph runs again).
public struct ReloadSummary: Sendable, CustomStringConvertible {
    /// How a reload ended.
    public enum Outcome: String, Sendable {
        /// The new graph runs.
        case applied
        /// The new graph was refused before anything changed (invalid route files, a
        /// plugin's create() failed); the running graph is untouched.
        case rejected
        /// Something failed after the running graph had changed (an instance did not
        /// start, a plugin refused its new configuration); the previous graph was restored.
        case rolledBack = "rolled_back"
    }

    /// How it ended.
    public var outcome: Outcome = .applied
    /// Why it was rejected or rolled back.
    public var reason: String?
    /// Instances whose plugin and configuration did not change: they kept running.
    public var keptInstances: [String] = []
    /// Instances whose plugin adopted the changed configuration in place (reconfigure).
    public var reconfiguredInstances: [String] = []
    /// Instances created and started.
    public var startedInstances: [String] = []
    /// Instances stopped (removed, or replaced because their plugin could not adopt the change).
    public var stoppedInstances: [String] = []
    /// Routes that kept their queue and worker.
    public var keptRoutes: [String] = []
    /// Routes started.
    public var startedRoutes: [String] = []
    /// Routes retired.
    public var retiredRoutes: [String] = []
    /// iiideas of the router's store left out of the new graph, with the reason (their
    /// preferences or template no longer validate).
    public var skippedIiideas: [String: String] = [:]

    /// An empty summary (applied, nothing changed).
    public init() {}

    /// A reload refused before anything changed.
    public static func rejected(_ reason: String) -> ReloadSummary {
        var summary = ReloadSummary()
        summary.outcome = .rejected
        summary.reason = reason
        return summary
    }

    /// Whether the new graph now runs.
    public var isApplied: Bool { outcome == .applied }

    public var description: String {
        let changes =
            "instances kept \(keptInstances.count), reconfigured \(reconfiguredInstances), started \(startedInstances), "
            + "stopped \(stoppedInstances); routes kept \(keptRoutes.count), started \(startedRoutes), retired \(retiredRoutes)"
        switch outcome {
        case .applied: return changes
        case .rejected: return "rejected: \(reason ?? "unknown")"
        case .rolledBack: return "rolled back: \(reason ?? "unknown"); the attempt: \(changes)"
        }
    }
}
