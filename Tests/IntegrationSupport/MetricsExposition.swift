import Testing

/// Samples read from the router's Prometheus exposition (`GET /metrics` on the admin port).
enum MetricsExposition {
    /// The value of `series` (its name and labels, exactly as exposed) in `text`; nil when absent.
    static func sample(_ series: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    /// The value of `series` from the admin port at `admin` (`host:port` or a URL); nil when absent.
    static func sample(_ series: String, admin: String) throws -> Double? {
        let base = admin.hasPrefix("http://") || admin.hasPrefix("https://") ? admin : "http://" + admin
        return sample(series, in: try HTTPExchange.send(base + "/metrics").body)
    }

    /// A metric plugin instance `instance` reported (0 before it reported one).
    static func pluginMetric(_ name: String, instance: String, admin: String) throws -> Double {
        try sample("switchyard_plugin_metric{instance=\"\(instance)\",name=\"\(name)\"}", admin: admin) ?? 0
    }
}
