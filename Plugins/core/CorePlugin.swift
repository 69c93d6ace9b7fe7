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
                "subprocess": [
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["command"],
                    "properties": [
                        "command": [
                            "type": "array", "items": ["type": "string"], "minItems": 1,
                            "description": "The program and its arguments (looked up on PATH)",
                        ],
                        "codec": ["enum": ["lines", "json"], "description": "lines: core.Line text; json: each line one JSON value"],
                        "restart": [
                            "type": ["string", "integer"],
                            "description": "Wait before restarting after it exits (default 1s, at least 100ms)",
                        ],
                    ],
                ],
            ],
        ]
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
        if let subprocessConfig = config["subprocess"] {
            let command = (subprocessConfig["command"]?.arrayValue ?? []).compactMap(\.stringValue)
            guard !command.isEmpty else { throw PluginError("subprocess.command must list the program and its arguments") }
            let codecName = subprocessConfig["codec"]?.stringValue ?? "lines"
            guard let codec = Subprocess.Codec(rawValue: codecName) else {
                throw PluginError("subprocess.codec '\(codecName)': expected lines or json")
            }
            var restart: UInt64 = 1_000_000_000
            if let text = subprocessConfig["restart"] {
                guard let parsed = DurationText.nanoseconds(text) else {
                    throw PluginError("subprocess.restart must be a duration such as 500ms or 5s")
                }
                restart = parsed
            }
            // At least 100 ms, so a program that cannot start is not retried in a busy loop.
            subprocess = Subprocess(
                context: context, command: command, codec: codec, restartDelay: max(Double(restart) / 1e9, 0.1))
        } else {
            subprocess = nil
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
