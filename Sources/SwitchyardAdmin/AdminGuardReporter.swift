import Logging
import Metrics
import SwitchyardConnectionGuard

/// The admin port's connection guard reports in the router's log and its metrics
/// (`switchyard_admin_connections_refused_total`, …).
struct AdminGuardReporter: ConnectionGuardReporter {
    let logger: Logger

    func warning(_ line: String) { logger.warning("\(line)") }
    func count(_ name: String) { Counter(label: "switchyard_" + name).increment() }
    func gauge(_ name: String, _ value: Double) { Gauge(label: "switchyard_" + name).record(value) }
}
