extension Router {
    /// Counters of every route and instance, and the metrics plugins reported.
    public var statistics: RouterStatistics {
        let (instances, routes) = graphLock.withLock { (liveInstances, liveRoutes) }
        return RouterStatistics(
            routes: routes.map(RouterStatistics.Route.init),
            instances: instances.map(RouterStatistics.Instance.init),
            pluginMetrics: metrics.pluginValues
        )
    }

    /// Brings every exported series up to date (route and instance counters, readiness,
    /// loaded plugins): call before the metrics backend exports them.
    public func publishMetrics() {
        let (instances, routes) = graphLock.withLock { (liveInstances, liveRoutes) }
        metrics.publish(routes: routes, instances: instances, ready: readiness, plugins: plugins)
    }
}
