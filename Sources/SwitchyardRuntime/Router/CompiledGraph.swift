import Foundation
internal import SwitchyardCore

/// The running graph: the validated plan and the instances and routes compiled from it.
///
/// Immutable: a reload compiles a new one and ``Router`` swaps it in with one assignment under
/// its lock, so a reader takes one snapshot and sees a plan with its own instances and routes,
/// never the instances of one graph with the routes of the next.
package final class CompiledGraph: Sendable {
    /// The plan the graph was compiled from.
    package let plan: GraphPlan
    /// The instances now running, in plan order.
    let instances: [InstanceRuntime]
    /// The routes now running (iiidea routes last).
    let routes: [RouteRuntime]

    init(plan: GraphPlan, instances: [InstanceRuntime], routes: [RouteRuntime]) {
        self.plan = plan
        self.instances = instances
        self.routes = routes
    }

    /// `plan` before anything was compiled from it (a router not yet started).
    static func empty(_ plan: GraphPlan) -> CompiledGraph { CompiledGraph(plan: plan, instances: [], routes: []) }

    /// The running instance named `name`.
    func instance(named name: String) -> InstanceRuntime? { instances.first { $0.name == name } }
}

/// Every route ever started, by index: an at-least-once acknowledgement finds its route's worker
/// here by the index its delivery id carries, also for a route a reload retired or one a reload
/// started before its graph was swapped in. Append-only, so it is not part of a
/// ``CompiledGraph``.
final class RouteTable: Sendable {
    // A pthread lock (``Locked``), which ThreadSanitizer sees: it does not see
    // Synchronization's Mutex wait on its futex, and a reload appending while an
    // acknowledgement reads was reported as a race.
    private let routes = Locked<[RouteRuntime]>([])

    /// Makes a route with the next index and keeps it.
    func append(_ make: (_ index: Int) -> RouteRuntime) -> RouteRuntime {
        routes.withLock { routes in
            let route = make(routes.count)
            routes.append(route)
            return route
        }
    }

    /// The route with `index`, if there is one.
    subscript(index: Int) -> RouteRuntime? {
        routes.withLock { index >= 0 && index < $0.count ? $0[index] : nil }
    }
}
