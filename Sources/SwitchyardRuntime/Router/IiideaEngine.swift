package import SwitchyardCore

/// What runs a router's iiideas: `RouterIiideas`, in SwitchyardIiideas, which installs itself
/// with ``Router/install(iiideas:)`` before the router starts. The router knows no iiidea beyond
/// this: it asks for the chains of a plan's iiidea routes, gives each its own thread, and tells
/// the engine of starts, reloads, ready instances, pieces' answers and the stop.
package protocol IiideaEngine: AnyObject, Sendable {
    /// The route of each iiidea of `plan` (its trigger's, and its remote's when declared), with
    /// the chain that works it.
    func chains(of plan: GraphPlan) throws(RouterError) -> [(route: PlannedRoute, chain: any RouteChain)]

    /// Takes `plan`'s OAuth connections: after a start, before the pieces are asked, and after
    /// each reload.
    func adopt(_ plan: GraphPlan)

    /// Asks the pieces of every enabled iiidea to enable: once the router has started.
    func activateEnabled()

    /// After a reload from `old` to `new`: pieces of iiideas that left are disabled, those of
    /// new or changed ones enabled.
    func reconcile(from old: CompiledGraph, to new: CompiledGraph)

    /// What a piece refused for may have passed (`cause`: an instance is ready, a hold was
    /// granted): enabled iiideas left inactive for a reason `matches` ask their pieces again.
    func askAgain(becauseOf cause: String, _ matches: @escaping @Sendable (String) -> Bool)

    /// The host's `piece_done`: a plugin's answer to a service piece it was asked to run.
    func pieceDone(token: UInt64, status: Int32, output: [UInt8])

    /// The router is stopping: nothing the engine runs on its own (token refreshes) goes on.
    func stop()
}

/// What an iiidea route runs: the engine's, one per route.
package protocol RouteChain: Sendable {
    /// The worker of `route`, made on the route's thread and used only there.
    func makeWorker(for route: ChainRoute) -> any RouteChainWorker
}

/// The worker of a chain's route: the route's thread hands it every envelope taken from the
/// route's queue, in order, and the acknowledgement of every delivery it made.
package protocol RouteChainWorker: AnyObject {
    /// Runs the chain once for `trigger` (the trigger port's envelope).
    func run(_ trigger: Envelope)

    /// The action's sink acknowledged delivery `deliveryID` with `outcome` (`SY_OUTCOME_*`),
    /// and `reason` when it failed.
    func acknowledged(deliveryID: UInt64, outcome: Int32, reason: String)
}
