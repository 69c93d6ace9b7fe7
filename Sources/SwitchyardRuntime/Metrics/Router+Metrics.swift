extension Router {
    /// Counters of every route and instance, and the metrics plugins reported.
    public var statistics: RouterStatistics {
        let graph = self.graph
        return RouterStatistics(
            routes: graph.routes.map(RouterStatistics.Route.init),
            instances: graph.instances.map(RouterStatistics.Instance.init),
            pluginMetrics: metrics.pluginValues
        )
    }

    /// Brings every exported series up to date (route and instance counters, readiness,
    /// loaded plugins): call before the metrics backend exports them.
    public func publishMetrics() {
        let graph = self.graph
        metrics.publish(routes: graph.routes, instances: graph.instances, ready: readiness, plugins: plugins, tracing: tracing)
    }
}
