import SwitchyardCore
import SwitchyardPluginKit

/// The exported entry point of `libcore.so`.
@_cdecl("switchyard_plugin_entry")
public func switchyardPluginEntry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(CorePlugin.self, offer: offer, table: table, capacity: capacity)
}

/// The built-in pieces that need no outside server: a timer, the console, a JSON-lines file
/// and a relay. An instance enables a piece by having its configuration key
/// (`timer:`, `console:`, `file:`, `relay:`); each piece's ports exist only then.
final class CorePlugin: SwitchyardPlugin {
    static let manifest = PluginManifest(
        name: "core",
        version: "1.0.0",
        summary: "Timer, console, JSON-lines file and relay: routes that run with no outside server",
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
        config: [
            "type": "object",
            "additionalProperties": false,
            "properties": [
                "timer": [
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["interval"],
                    "properties": [
                        "interval": ["type": ["string", "integer"], "description": "250ms, 1s, 2m… or milliseconds"],
                        "count": ["type": "integer", "minimum": 0, "description": "Stop after this many ticks (0: never)"],
                    ],
                ],
                "console": [
                    "type": "object",
                    "additionalProperties": false,
                    "properties": ["format": ["enum": ["body", "envelope"], "description": "What 'print' writes per line"]],
                ],
                "file": [
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["path"],
                    "properties": [
                        "path": ["type": "string", "minLength": 1],
                        "format": ["enum": ["envelope", "body"]],
                        "fsync": ["type": "boolean", "description": "fsync after every line before acking"],
                    ],
                ],
                "relay": ["type": "object", "additionalProperties": false],
            ],
        ]
    )

    let context: PluginContext
    let name: String
    let timer: Ticker?
    let console: Console?
    let file: JSONLinesFile?
    let relays: Bool

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        self.name = name
        if let timerConfig = config["timer"] {
            guard let interval = timerConfig["interval"].flatMap(DurationText.nanoseconds), interval > 0 else {
                throw PluginError("timer.interval must be a positive duration such as 250ms or 1s")
            }
            timer = Ticker(context: context, interval: interval, limit: timerConfig["count"]?.intValue ?? 0)
        } else {
            timer = nil
        }
        console = config["console"].map { Console(context: context, printsEnvelopes: $0["format"]?.stringValue == "envelope") }
        if let fileConfig = config["file"] {
            guard let path = fileConfig["path"]?.stringValue else { throw PluginError("file.path must be a path") }
            file = try JSONLinesFile(
                path: path,
                writesEnvelopes: fileConfig["format"]?.stringValue != "body",
                syncs: fileConfig["fsync"]?.boolValue ?? false
            )
        } else {
            file = nil
        }
        relays = config["relay"] != nil
    }

    func start() throws {
        timer?.start()
        console?.start()
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

    func quiesce() {
        timer?.stop()
        console?.stop()
    }

    func stop() {
        quiesce()
        file?.close()
    }

    func resume(port: String) {
        if port == "tick" { timer?.resume() }
    }
}
