public import SwitchyardCore

/// The service pieces the router itself provides.
public enum BuiltinPieces {
    /// Their names.
    public static let names = ["pass", "template", "map", "delay", "http", "script"]

    /// The JSON Schema of a built-in piece's preferences; nil for other pieces.
    public static func preferenceSchema(of piece: String) -> JSONValue? {
        let duration: JSONValue = ["type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"]
        switch piece {
        case "pass": return ["type": "object", "properties": [:], "additionalProperties": false]
        case "template":
            return [
                "type": "object", "required": ["text"], "additionalProperties": false,
                "properties": [
                    "text": ["type": "string", "description": "A template over the trigger's output, such as {{body.kind}} at {{time}}"]
                ],
            ]
        case "map":
            return [
                "type": "object", "required": ["map"], "additionalProperties": false,
                "properties": ["map": ["type": "object", "description": "Output fields and their templates (JSON)"]],
            ]
        case "delay":
            return [
                "type": "object", "required": ["duration"], "additionalProperties": false,
                "properties": [
                    "duration": duration.adding(["description": "How long to wait: 500ms, 2s, 1m", "default": "1s"])
                ],
            ]
        case "http":
            return [
                "type": "object", "required": ["url"], "additionalProperties": false,
                "properties": [
                    "url": [
                        "type": "string", "pattern": "^https?://",
                        "description": "The URL (a template; inserted values are percent-encoded)",
                    ],
                    "method": [
                        "type": "string", "enum": ["GET", "POST", "PUT", "PATCH", "DELETE"], "default": "GET", "description": "The method",
                    ],
                    "headers": ["type": "object", "additionalProperties": ["type": "string"], "description": "Header templates (JSON)"],
                    "body": ["type": "object", "description": "The JSON body, a mapping of templates (JSON)"],
                    "timeout": duration.adding(["description": "How long to wait for the answer", "default": "10s"]),
                    "allow_private": [
                        "type": "boolean", "default": false, "description": "Allow loopback, link-local and private addresses",
                    ],
                    "max_redirects": [
                        "type": "integer", "minimum": 0, "maximum": .int(HTTPPiecePolicy.redirectLimit), "default": 0,
                        "description": "Redirects followed",
                    ],
                    "auth": [
                        "type": "object", "additionalProperties": false, "required": ["oauth"],
                        "properties": ["oauth": ["type": "string", "description": "The OAuth connection (oauth: in the route files)"]],
                        "description": "Call with an OAuth connection's token",
                    ],
                ],
            ]
        case "script":
            return [
                "type": "object", "additionalProperties": false,
                "properties": [
                    "source": [
                        "type": "string", "format": "lua",
                        "description": "Lua run on the trigger's output; it returns the action's input (see docs/scripting.md)",
                        "default": "return envelope",
                    ],
                    "file": ["type": "string", "description": "A Lua file instead of source (relative to the route file)"],
                    "state": [
                        "type": "string", "enum": ["memory", "persistent"], "default": "memory",
                        "description": "Where the script's state table lives",
                    ],
                    "limits": [
                        "type": "object", "additionalProperties": false, "description": "The script's budgets",
                        "properties": [
                            "memory": ["type": "string", "default": "16MiB"], "instructions": ["type": "integer", "default": 1_000_000],
                            "string_length": ["type": "string", "default": "1MiB"],
                            "pattern_steps": ["type": "integer", "default": 100_000_000],
                            "outputs": ["type": "integer", "default": 1000],
                        ],
                    ],
                ],
            ]
        default: return nil
        }
    }
}

extension JSONValue {
    fileprivate func adding(_ members: [String: JSONValue]) -> JSONValue {
        guard case .object(var object) = self else { return self }
        for (key, value) in members { object[key] = value }
        return .object(object)
    }
}
