import ArgumentParser
import Foundation
import SwitchyardAdmin
import SwitchyardAdminClient
import SwitchyardCore

/// `switchyard tap ROUTE|PORT`: the envelopes passing a route (after its condition and
/// map/template) or leaving a source port of a running router, as they pass.
struct Tap: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream the envelopes passing a route or leaving a source port of a running router.",
        discussion: """
            TARGET is a route name, or instance.port for a source port (`--port` forces the \
            latter). Secrets are masked. With nobody tapping the routes pay one atomic load per \
            envelope; a slow reader loses the oldest envelopes rather than slowing the route.
            """)

    /// How envelopes are printed.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, pretty
    }

    @Argument(help: "A route name, or instance.port of a source port.")
    var target: String

    @Flag(help: "TARGET is a source port even if a route has that name.")
    var port = false

    @Option(name: .customLong("when"), help: "Only envelopes for which this condition holds (as a route's when:).")
    var condition: String?

    @Option(help: "Stop after this many envelopes.")
    var limit: Int?

    @Option(help: "json: one envelope per line; pretty: a header line and the body.")
    var format: Format = .pretty

    @Flag(help: "Show bodies as hex rather than text.")
    var hex = false

    @Option(help: "The most envelopes a second to show (1-10000); the rest are counted as not shown.")
    var rate: Int = 200

    @OptionGroup var connection: AdminConnection

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        guard (1...10_000).contains(rate) else { throw ValidationError("--rate must be 1-10000") }
    }

    func run() throws {
        // Heartbeats come every 15 s: a minute of silence means the router is gone.
        let client = try connection.client(timeout: .seconds(60))
        let isPort = port || target.contains(".")
        var query = [(isPort ? "port" : "route", target)]
        if let condition { query.append(("when", condition)) }
        if let limit { query.append(("limit", String(limit))) }
        query.append(("rate", String(rate)))
        let path = "/v1/tap?" + query.map { "\($0.0)=\(pathSegment($0.1))" }.joined(separator: "&")
        var shown = 0
        var ended: String?
        do {
            try client.events(path) { event, data in
                if event == "end" {
                    ended = (try? JSONValue(parsing: Array(data.utf8)))?["reason"]?.stringValue ?? "the router ended it"
                    return false
                }
                if event == "skipped", let count = (try? JSONValue(parsing: Array(data.utf8)))?["skipped"]?.intValue {
                    printError("(\(count) more not shown: over --rate \(rate) a second)")
                    return true
                }
                guard event == "envelope", let envelope = try? JSONValue(parsing: Array(data.utf8)) else { return true }
                print(render(envelope))
                fflush(nil)
                shown += 1
                return limit.map { shown < $0 } ?? true
            }
        } catch {
            printError("error: \(error)")
            throw ExitCode(1)
        }
        if let limit, shown >= limit { return }
        printError(
            "tap ended after \(shown) envelope\(shown == 1 ? "" : "s"): \(ended ?? "the router closed the connection (it stopped or was killed)")"
        )
        throw ExitCode(1)
    }

    /// One envelope as `--format` and `--hex` ask.
    private func render(_ envelope: JSONValue) -> String {
        var envelope = envelope
        if hex, case .object(var members) = envelope, let body = members["body"] {
            let bytes = body.stringValue.map { Array($0.utf8) } ?? body.serializedBytes()
            members["body"] = .string(bytes.map { String(format: "%02x", $0) }.joined())
            envelope = .object(members)
        }
        guard format == .pretty else { return envelope.serialized() }
        let header = [
            envelope["time"]?.stringValue ?? "", envelope["type"]?.stringValue ?? "", envelope["source"]?.stringValue ?? "",
            envelope["subject"]?.stringValue.flatMap { $0.isEmpty ? nil : "subject=\($0)" } ?? "",
            envelope["id"]?.stringValue ?? "",
        ].filter { !$0.isEmpty }.joined(separator: "  ")
        let headers = (envelope["headers"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.map {
            "  \($0.key): \($0.value.stringValue ?? $0.value.serialized())"
        }
        let body = envelope["body"].map { $0.stringValue ?? $0.serialized() } ?? ""
        return ([header] + headers + ["  " + body]).joined(separator: "\n")
    }
}
