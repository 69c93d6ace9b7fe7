import SwitchyardCore
import SwitchyardPluginKit

/// The exported entry point of `libcore.so`.
@_cdecl("switchyard_plugin_entry")
public func switchyardPluginEntry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(CorePlugin.self, offer: offer, table: table, capacity: capacity)
}

/// The built-in pieces that need no outside server: a timer, the console, a JSON-lines file,
/// a relay and a subprocess. An instance enables a piece by having its configuration key
/// (`timer:`, `console:`, `file:`, `relay:`, `subprocess:`); each piece's ports exist only then.
final class CorePlugin: SwitchyardPlugin {
    /// Decoded by `validate` before anything starts (see ``SwitchyardPlugin/configuration``).
    static let configuration: (any PluginConfiguration.Type)? = CoreConfiguration.self

    static let manifest = PluginManifest(
        name: "core",
        version: "1.0.0",
        summary: "Timer, console, JSON-lines file, relay and subprocess: routes that run with no outside server",
        ports: [
            PortDeclaration(
                name: "tick", direction: .source, types: ["core.Tick"], requires: "timer", summary: "One envelope per interval"),
            PortDeclaration(
                name: "lines", direction: .source, types: ["core.Line"], requires: "console", summary: "Lines read from standard input"),
            PortDeclaration(
                name: "print", direction: .sink, types: ["*"], requires: "console",
                summary: "Writes each body (or envelope) to standard output"),
            PortDeclaration(
                name: "write", direction: .sink, types: ["*"], requires: "file", summary: "Appends each envelope as one JSON line"),
            PortDeclaration(
                name: "in", direction: .sink, types: ["*"], requires: "relay", feeds: ["out"], summary: "Envelopes to pass on unchanged"),
            PortDeclaration(name: "out", direction: .source, types: ["*"], requires: "relay", summary: "What 'in' received, trace kept"),
            PortDeclaration(
                name: "stdout", direction: .source, types: ["core.Line", "json"], requires: "subprocess",
                summary: "The program's output lines (JSON values with codec: json)"),
        ],
        types: [
            "core.Tick": [
                "type": "object",
                "properties": ["count": ["type": "integer"], "time": ["type": "string"]],
                "required": ["count", "time"],
                "additionalProperties": false,
            ],
            "core.Line": ["type": "string"],
        ],
        config: CoreConfiguration.jsonSchema
    )

    let context: PluginContext
    let name: String
    let timer: Ticker?
    let console: Console?
    let file: JSONLinesFile?
    let relays: Bool
    let subprocess: Subprocess?

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        self.name = name
        let configuration = try CoreConfiguration(config: config)
        timer = configuration.timer.map { Ticker(context: context, interval: $0.interval.nanoseconds, limit: $0.count) }
        console = configuration.console.map { Console(context: context, printsEnvelopes: $0.format == .envelope) }
        file = try configuration.file.map { try JSONLinesFile(path: $0.path, writesEnvelopes: $0.format == .envelope, syncs: $0.fsync) }
        relays = configuration.relay != nil
        subprocess = configuration.subprocess.map {
            Subprocess(context: context, command: $0.command, directory: $0.directory, codec: $0.codec, restartDelay: $0.restartDelay)
        }
    }

    func start() throws {
        timer?.start()
        console?.start()
        subprocess?.start()
    }

    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery) {
        switch port {
        case "print":
            guard let console else { return delivery.ack(.reject, reason: "instance \(name) has no console") }
            console.print(envelope)
            delivery.ack(.ok)
        case "write":
            guard let file else { return delivery.ack(.reject, reason: "instance \(name) has no file") }
            do {
                try file.append(envelope)
                delivery.ack(.ok)
            } catch {
                delivery.ack(.retry, reason: "\(error)")
            }
        case "in":
            guard relays else { return delivery.ack(.reject, reason: "instance \(name) has no relay") }
            switch context.emit(envelope, on: "out") {
            case .ok: delivery.ack(.ok)
            case .full: delivery.ack(.retry, reason: "relay output is full")
            case let other: delivery.ack(.reject, reason: "relay could not emit: \(other)")
            }
        default:
            delivery.ack(.reject, reason: "unknown port \(port)")
        }
    }

    /// The file sink reads a lent envelope in place; every other port takes a copy.
    func deliver(borrowing envelope: borrowing BorrowedEnvelope, on port: String, delivery: Delivery) {
        guard port == "write", let file else { return deliver(envelope.copy(), on: port, delivery: delivery) }
        do {
            try file.append(borrowing: envelope)
            delivery.ack(.ok)
        } catch {
            delivery.ack(.retry, reason: "\(error)")
        }
    }

    func quiesce() {
        timer?.stop()
        console?.stop()
        subprocess?.stop()
    }

    func stop() {
        quiesce()
        file?.close()
    }

    func resume(port: String) {
        if port == "tick" { timer?.resume() }
        if port == "stdout" { subprocess?.resume() }
        if port == "lines" { console?.resume() }
    }
}
