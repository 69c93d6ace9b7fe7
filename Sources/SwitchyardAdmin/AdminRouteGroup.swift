import Hummingbird

/// A group of admin routes that owns what its handlers need (the router, the catalog, the
/// reload): ``AdminServer`` builds each and registers it, and keeps only the server itself.
protocol AdminRouteGroup: Sendable {
    /// Registers the group's routes on the admin port's router.
    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>)
}
