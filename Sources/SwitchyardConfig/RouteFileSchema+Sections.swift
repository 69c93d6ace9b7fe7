import SwitchyardCore

extension RouteFileSchema {
    /// The top-level keys.
    public static var topLevel: Keys {
        [
            ("plugins", "where the plugins are", object(pluginsKeys)),
            ("spool", "the SQLite store of at-least-once routes, dead letters and plugin state", object(spoolKeys)),
            ("store", "a PostgreSQL store routers share (scale-out)", object(storeKeys)),
            ("admin", "the admin HTTP port", object(adminKeys)),
            ("tracing", "OpenTelemetry traces over OTLP", object(tracingKeys)),
            ("types", "envelope types defined here", list(object(typeKeys, required: ["name", "schema"]))),
            ("instances", "plugin instances by name", ["type": "object"]),
            ("routes", "routes from a source port to sink ports", list(object(routeKeys, required: ["from", "to"]))),
            ("iiideas", "trigger → service → action chains", list(object(iiideaKeys, required: ["id", "trigger", "service", "action"]))),
            (
                "iiidea_templates", "the store's catalog of iiideas a person obtains",
                list(object(templateKeys, required: ["id", "trigger", "service", "action"]))
            ),
            (
                "iiidea_history", "how many runs are kept per iiidea",
                object([("keep", "runs kept per iiidea", ["type": "integer", "minimum": 1])])
            ),
            ("oauth", "OAuth connections by name, for the http piece", ["type": "object", "additionalProperties": object(oauthKeys)]),
        ]
    }

    static let pluginsKeys: Keys = [("dir", "the plugin folder", path)]
    static let spoolKeys: Keys = [
        ("path", "the spool's SQLite file (default state/spool.db)", path),
        ("sync", "full: every commit survives power loss; normal: faster, may lose the last commits", enumeration(["full", "normal"])),
    ]
    static let storeKeys: Keys = [("url", "postgres://… without a password; \"${SWITCHYARD_STORE_URL}\"", string)]
    static let adminKeys: Keys = [
        ("listen", "host:port of the admin port (loopback unless a token is set)", string),
        ("token", "a bearer token the admin port requires (\"${ADMIN_TOKEN}\")", string),
        ("allowed_hosts", "Host header names the admin port answers besides its address", list(string)),
        (
            "max_connections", "connections open at once (default 64); at the cap a slow or idle one makes room",
            ["type": "integer", "minimum": 1, "maximum": 65536]
        ),
        (
            "max_connections_per_peer", "connections open at once from one address (default max_connections / 4)",
            ["type": "integer", "minimum": 1, "maximum": 65536]
        ),
        ("header_timeout", "how long a request head may take (default 10s)", duration),
    ]
    static let tracingKeys: Keys = [
        ("otlp_endpoint", "the OTLP/HTTP collector, http://host:4318", string),
        ("service_name", "service.name of the spans", string),
        ("sample", "the share of traces kept, 0 to 1", ["type": "number", "minimum": 0, "maximum": 1]),
    ]
    static let typeKeys: Keys = [
        ("name", "the type's name (a dotted name such as demo.Line)", string),
        ("schema", "the JSON Schema of its bodies", ["type": "object"]),
    ]
    static let instanceKeys: Keys = [
        ("plugin", "the plugin this instance runs", string),
        ("log_level", "this instance's log level", enumeration(ConfigLoader.logLevels)),
        ("exclusive", "run on one router at a time (a store-held lock); the others stand by", ["type": "boolean"]),
    ]

    /// An instance: its plugin, and that plugin's configuration beside the common keys.
    static func instance(plugins: [(name: String, config: JSONValue)]) -> JSONValue {
        var base = object(instanceKeys, required: ["plugin"])
        guard case .object(var members) = base else { return base }
        guard !plugins.isEmpty else {
            members["additionalProperties"] = true
            return .object(members)
        }
        members["properties"] = members["properties"].map { properties in
            guard case .object(var fields) = properties else { return properties }
            fields["plugin"] = ["description": "the plugin this instance runs", "enum": .array(plugins.map { .string($0.name) })]
            return .object(fields)
        }
        // Each plugin's keys beside the common ones; a key neither knows is an error.
        members.removeValue(forKey: "additionalProperties")
        members["allOf"] = .array(
            plugins.map { plugin in
                var then = plugin.config.objectValue ?? [:]
                var properties = then["properties"]?.objectValue ?? [:]
                for key in instanceKeys where properties[key.name] == nil { properties[key.name] = true }
                then["properties"] = .object(properties)
                if then["additionalProperties"] == nil { then["additionalProperties"] = false }
                then["type"] = "object"
                return ["if": ["properties": ["plugin": ["const": .string(plugin.name)]]], "then": .object(then)]
            })
        base = .object(members)
        return base
    }

    static let scriptKeys: Keys = [
        ("source", "Lua 5.4 text", string),
        ("file", "a Lua file", path),
        (
            "state", "memory (default: kept while the router runs) or persistent (kept in the store across restarts)",
            enumeration(["memory", "persistent"])
        ),
        ("limits", "the script's budget", object(scriptLimitKeys)),
    ]
    static let scriptLimitKeys: Keys = [
        ("memory", "the most memory a call may hold", size),
        ("instructions", "the most Lua instructions a call may run", ["type": "integer", "minimum": 1]),
        ("string_length", "the longest string a call may make", size),
        ("pattern_steps", "the most steps a string pattern may take", ["type": "integer", "minimum": 1]),
        ("outputs", "the most envelopes a call may emit", ["type": "integer", "minimum": 1]),
    ]
    static let queueKeys: Keys = [
        ("size", "envelopes the route's queue holds", ["type": "integer", "minimum": 1]),
        ("on_full", "what a full queue does", enumeration(OnFull.allCases.map(\.rawValue))),
        ("spool_limit", "the most the route keeps in the spool with on_full: spool", size),
    ]
    static let retryKeys: Keys = [
        ("attempts", "tries before a delivery becomes a dead letter", ["type": "integer", "minimum": 1]),
        ("backoff", "the first wait between tries", duration),
        ("max_backoff", "the longest wait between tries", duration),
    ]
    static let dedupeKeys: Keys = [
        ("key", "a template of the dedupe key, e.g. \"{{body.message_id}}\" (default: the envelope id)", string),
        ("window", "how long keys are remembered", duration),
    ]
    static var routeKeys: Keys {
        [
            ("name", "the route's name (default FILE#N)", string),
            ("from", "the source port", port),
            ("to", "a sink port, or a list of them", oneOf(port, list(port))),
            ("when", "a condition the envelope must meet", string),
            ("map", "a JSON body built from templates", ["type": "object"]),
            ("template", "a text body from one template", string),
            ("script", "Lua 5.4 run on each envelope", oneOf(string, object(scriptKeys))),
            ("type", "the type the map, template or script produces", string),
            ("content_type", "the content type of what the map or template produces", string),
            ("queue", "the route's queue", object(queueKeys)),
            ("loop", "prevent (default) or allow an envelope back into an instance it passed", enumeration(["prevent", "allow"])),
            ("delivery", "at-most-once (default) or at-least-once", enumeration(Delivery.allCases.map(\.rawValue))),
            ("retry", "tries of an at-least-once route", object(retryKeys)),
            ("dedupe", "drop redeliveries seen within a window", oneOf(duration, object(dedupeKeys))),
        ]
    }
    static let triggerKeys: Keys = [("port", "the source port", port), ("when", "a condition the envelope must meet", string)]
    static let serviceKeys: Keys = [
        ("piece", "pass, template, map, delay, http, script, or instance.piece", string), ("preferences", "the piece's settings", any),
    ]
    static let actionKeys: Keys = [("port", "the sink port", port), ("preferences", "the action's settings", any)]
    static var iiideaKeys: Keys {
        [
            ("id", "the iiidea's id", ["type": "string", "pattern": "^[A-Za-z0-9_-]+$"]),
            ("title", "a title people read", string),
            ("owner", "the user it runs for", string),
            ("trigger", "what starts a run", object(triggerKeys, required: ["port"])),
            ("service", "what the run computes", object(serviceKeys, required: ["piece"])),
            ("action", "where the result goes", object(actionKeys, required: ["port"])),
            ("remote", "a port that starts it on request", object([("port", "the source port", port)], required: ["port"])),
            ("enabled", "whether it starts enabled (default true)", ["type": "boolean"]),
        ]
    }
    static var templateKeys: Keys {
        iiideaKeys.filter { $0.name != "owner" } + [
            ("description", "what it does, for the catalog", string), ("tags", "catalog tags", list(string)),
        ]
    }
    static let oauthKeys: Keys = [
        ("authorize_url", "the provider's authorization URL", string),
        ("token_url", "the provider's token URL", string),
        ("client_id", "the client id", string),
        ("client_secret", "the client secret (\"${VAR}\")", string),
        ("scopes", "the scopes asked for", list(string)),
        ("redirect_url", "where the provider sends the person back", string),
        ("refresh_before", "how long before expiry a token is refreshed", duration),
    ]
}
