import ArgumentParser
import Foundation
import SwitchyardAdmin
import SwitchyardAdminClient
import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `switchyard top`: live rates per route and per instance of a running router, from its admin
/// port, refreshed in place on a terminal (one block of plain lines per refresh otherwise).
struct Top: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show live per-route and per-instance rates, queue depths, errors and readiness of a running router.",
        discussion: """
            Reads the admin port's /v1/routes and /v1/instances every --interval; rates are per \
            second over the last interval. On a terminal the screen is redrawn in place; otherwise \
            each refresh is printed as a block of lines (a time, then the tables). Ctrl-C stops it.
            """)

    @OptionGroup var connection: AdminConnection

    @Option(help: "How often to refresh: 500ms, 1s, 5s…")
    var interval: String = "1s"

    @Option(help: "Stop after this many refreshes (default: until interrupted).")
    var iterations: Int?

    func validate() throws {
        guard let nanos = DurationText.nanoseconds(interval), nanos >= 100_000_000 else {
            throw ValidationError("--interval must be a duration of at least 100ms, such as 1s")
        }
        if let iterations, iterations < 1 { throw ValidationError("--iterations must be at least 1") }
    }

    func run() throws {
        let pause = Double(DurationText.nanoseconds(interval) ?? 1_000_000_000) / 1e9
        let client = try connection.client(timeout: .seconds(10))
        let terminal = isatty(STDOUT_FILENO) == 1
        var previous: TopSnapshot?
        var count = 0
        while iterations.map({ count < $0 }) ?? true {
            let snapshot: TopSnapshot
            do {
                snapshot = try TopSnapshot(client: client)
            } catch {
                printError("error: \(error) — is the router running with --admin?")
                throw ExitCode(1)
            }
            let screen = snapshot.render(since: previous)
            if terminal {
                // Home and clear, then the screen: redrawn in place.
                print("\u{1B}[H\u{1B}[2J" + screen, terminator: "")
            } else {
                print(screen)
            }
            fflush(nil)
            previous = snapshot
            count += 1
            if iterations.map({ count < $0 }) ?? true {
                // The refresh rate of a display, not a wait for an event.
                Thread.sleep(forTimeInterval: pause)
            }
        }
    }
}

/// The counters of one refresh.
struct TopSnapshot {
    struct Route {
        var name: String
        var counters: [String: Int]
    }

    struct Instance {
        var name: String
        var ready: Bool
        var reason: String?
        var counters: [String: Int]
    }

    var taken: ContinuousClock.Instant
    var wallClock: Date
    var routes: [Route]
    var instances: [Instance]

    init(client: AdminClient) throws {
        func fetch(_ path: String) throws -> [JSONValue] {
            let answer = try client.get(path)
            guard answer.status == 200, let list = try? JSONValue(parsing: answer.body).arrayValue else {
                let message = (try? JSONValue(parsing: answer.body))?["error"]?.stringValue
                throw TopError(description: message ?? "\(path) answered \(answer.status)")
            }
            return list
        }
        func counters(_ value: JSONValue) -> [String: Int] {
            (value.objectValue ?? [:]).compactMapValues { $0.intValue }
        }
        taken = .now
        wallClock = Date()
        routes = try fetch("/v1/routes").map { Route(name: $0["name"]?.stringValue ?? "?", counters: counters($0)) }
        instances = try fetch("/v1/instances").map { value in
            Instance(
                name: value["name"]?.stringValue ?? "?", ready: value["ready"]?.boolValue ?? false, reason: value["reason"]?.stringValue,
                counters: counters(value))
        }
    }

    /// The tables: rates against `previous` (a dash on the first refresh).
    func render(since previous: TopSnapshot?) -> String {
        let seconds = previous.map { $0.taken.duration(to: taken) / .seconds(1) }
        func rate(_ value: Int?, _ before: Int?) -> String {
            guard let value, let before, let seconds, seconds > 0 else { return "-" }
            return String(format: "%.1f", Double(max(0, value - before)) / seconds)
        }
        var lines = ["switchyard top — \(ISO8601DateFormatter().string(from: wallClock))", ""]
        var routeRows = [["ROUTE", "IN/s", "OUT/s", "FILTERED/s", "DROPPED", "REFUSED", "QUEUE", "DEAD"]]
        for route in routes {
            let before = previous?.routes.first { $0.name == route.name }?.counters
            let value = route.counters
            routeRows.append([
                route.name, rate(value["received"], before?["received"]), rate(value["delivered"], before?["delivered"]),
                rate(value["filtered"], before?["filtered"]), String((value["dropped_full"] ?? 0) + (value["dropped_loop"] ?? 0)),
                String(value["refused"] ?? 0), String(value["queued"] ?? 0), value["dead_lettered"].map(String.init) ?? "-",
            ])
        }
        lines += Self.table(routeRows)
        lines.append("")
        var instanceRows = [["INSTANCE", "READY", "EMIT/s", "ACK/s", "FAILED", "IN-FLIGHT", "WHY NOT READY"]]
        for instance in instances {
            let before = previous?.instances.first { $0.name == instance.name }?.counters
            let value = instance.counters
            instanceRows.append([
                instance.name, instance.ready ? "yes" : "no", rate(value["emitted"], before?["emitted"]),
                rate(value["acknowledged"], before?["acknowledged"]), String(value["failed"] ?? 0), String(value["in_flight"] ?? 0),
                instance.ready ? "" : Redaction.redact(instance.reason ?? ""),
            ])
        }
        lines += Self.table(instanceRows)
        return lines.joined(separator: "\n") + "\n"
    }

    /// Rows in columns padded to their widest cell.
    static func table(_ rows: [[String]]) -> [String] {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { cell, width in cell.padding(toLength: width, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }
    }
}

/// The admin port answered something `top` cannot read.
struct TopError: Error, CustomStringConvertible {
    var description: String
}
