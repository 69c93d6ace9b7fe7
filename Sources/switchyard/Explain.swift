import ArgumentParser
import Foundation
import SwitchyardConfig
import SwitchyardCore
import SwitchyardRuntime

/// `switchyard explain`: what the routes would do with one sample envelope from one source
/// port — each condition with the values it read, the map/template output, each sink's type
/// check — without starting anything.
struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show, for one sample envelope from a source port, what each route would do with it (nothing is started).",
        discussion: """
            The envelope file is JSON: {"type": "...", "subject": "...", "headers": {"name": "value"}, \
            "body": ..., "contentType": "...", "trace": ["instance"]}; every field is optional (the \
            type defaults to the port's first declared type). For each route and iiidea from the \
            port it prints the condition with the values it read, whether the envelope passes, \
            what the route delivers after its map or template, and whether each sink takes it.
            """)

    @OptionGroup var options: GraphOptions

    @Option(help: "The source port the envelope comes from: instance.port.")
    var from: String

    @Option(help: "The sample envelope, a JSON file ('-' for standard input).")
    var envelope: String

    @Flag(help: "Print the steps as JSON.")
    var json = false

    func run() throws {
        var options = options
        if options.logLevel == .info { options.logLevel = .warning }
        guard let port = PortReference(from) else { throw ValidationError("--from must be instance.port") }
        guard let plan = options.loadPlan(logger: options.makeLogger()) else { throw ExitCode(1) }
        let explainer = RouteExplainer(plan: plan)
        guard let defaultType = explainer.defaultType(of: port) else {
            printError("error: \(from) is not a source port of this graph")
            throw ExitCode(1)
        }
        let sample: Envelope
        do {
            sample = try SampleEnvelope.read(envelope, source: port, defaultType: defaultType)
        } catch {
            printError("error: \(envelope): \(error)")
            throw ExitCode(1)
        }
        let steps = explainer.explain(sample, from: port) ?? []
        if json {
            print(JSONValue.array(steps.map(\.json)).serialized())
            return
        }
        print("envelope: \(sample.type) from \(port)")
        if steps.isEmpty { print("no route or iiidea starts at \(port)") }
        for step in steps { print(step.text, terminator: "") }
    }
}

/// Reading `--envelope`.
enum SampleEnvelope {
    /// The largest envelope file read.
    static let maximumBytes = 1 << 20

    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    static func read(_ path: String, source: PortReference, defaultType: String) throws -> Envelope {
        let handle: FileHandle
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            // Opened here, not through Foundation, so the reason reads as the system says it.
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw Problem(description: "cannot read it: \(String(cString: strerror(errno)))") }
            handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        }
        let bytes: Data
        do {
            bytes = try handle.read(upToCount: maximumBytes + 1) ?? Data()
        } catch {
            throw Problem(description: "cannot read it: \((error as NSError).localizedDescription)")
        }
        guard bytes.count <= maximumBytes else { throw Problem(description: "larger than \(maximumBytes) bytes") }
        guard let value = try? JSONValue(parsing: Array(bytes)), let object = value.objectValue else {
            throw Problem(description: "not a JSON object (see switchyard explain --help)")
        }
        let known = ["type", "subject", "source", "headers", "body", "contentType", "trace"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw Problem(description: "unknown field '\(unknown)' (expected: \(known.joined(separator: ", ")))")
        }
        var headers = Headers()
        for (name, header) in (object["headers"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let text = header.stringValue else { throw Problem(description: "headers.\(name) must be a string") }
            headers[name] = text
        }
        let contentType = object["contentType"]?.stringValue ?? "application/json"
        let body: [UInt8]
        switch object["body"] {
        case nil: body = Array("{}".utf8)
        case .string(let text)? where !contentType.contains("json"): body = Array(text.utf8)
        case let other?: body = other.serializedBytes()
        }
        return Envelope(
            type: object["type"]?.stringValue ?? defaultType, source: object["source"]?.stringValue ?? source.description,
            subject: object["subject"]?.stringValue ?? "", headers: headers, contentType: contentType, body: body,
            trace: object["trace"]?.arrayValue?.compactMap(\.stringValue) ?? [source.instance])
    }
}

extension RouteExplainer.Step {
    /// The step as `explain` prints it.
    var text: String {
        var lines = ["\(service == nil ? "route " : "")\(route) — \(location)"]
        if let condition {
            lines.append("  when \(condition) → \(passes)")
            for read in reads { lines.append("    \(read.field) = \(read.value.map { Redaction.redact($0.serialized()) } ?? "(absent)")") }
        } else {
            lines.append("  no condition")
        }
        for line in printed { lines.append("  script printed: \(Redaction.redact(line))") }
        if let scriptError {
            lines.append("  script failed (\(scriptError)); the envelope takes the route's failure path")
            return lines.joined(separator: "\n") + "\n"
        }
        guard passes, output != nil else {
            lines.append(droppedByScript ? "  dropped by the script (it returned nil or false)" : "  not taken")
            return lines.joined(separator: "\n") + "\n"
        }
        if let service { lines.append("  service \(service)\(outputIsFinal ? "" : " (not run here: the action gets its output)")") }
        for delivery in deliveries {
            let output = delivery.output
            let subject = deliveries.count > 1 || output.subject != "" ? " [subject \(output.subject)]" : ""
            lines.append("  delivers \(output.type)\(subject): \(Redaction.redact(String(decoding: output.body, as: UTF8.self)))")
            if scripted, output.headers.count > 0 {
                let headers = output.headers.fields.map { "\($0.name)=\(Redaction.redact($0.value))" }.joined(separator: ", ")
                lines.append("    headers: \(headers)")
            }
            for sink in delivery.sinks { lines.append("  → \(sink.sink): \(sink.refusal.map { "refuses: \($0)" } ?? "takes it")") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The step as `explain --json` prints it.
    var json: JSONValue {
        var object: [String: JSONValue] = [
            "route": .string(route), "location": .string(location.description), "passes": .bool(passes),
            "reads": .array(reads.map { ["field": .string($0.field), "value": $0.value ?? .null] }),
            "sinks": .array(
                sinks.map {
                    ["sink": .string($0.sink), "takes": .bool($0.refusal == nil), "refusal": $0.refusal.map { .string($0) } ?? .null]
                }),
        ]
        if let condition { object["when"] = .string(condition) }
        if let service {
            object["service"] = .string(service)
            object["service_run"] = .bool(outputIsFinal)
        }
        if let output { object["output"] = ["type": .string(output.type), "body": output.decodedBody()] }
        if deliveries.count > 1 {
            object["outputs"] = .array(
                deliveries.map {
                    ["type": .string($0.output.type), "subject": .string($0.output.subject), "body": $0.output.decodedBody()]
                })
        }
        if let scriptError { object["script_error"] = .string(scriptError) }
        if !printed.isEmpty { object["printed"] = .array(printed.map { .string($0) }) }
        return .object(object)
    }
}
