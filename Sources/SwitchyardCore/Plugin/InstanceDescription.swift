/// What one plugin instance is, derived by the plugin from its configuration (ABI version 2's
/// `describe`): its ports, the envelope types it adds, and what its ports can promise — the
/// source ports that confirm upstream only once the router has settled what they emitted, the
/// sink ports whose acknowledgement means the far side has the envelope, and the ports this
/// configuration makes at-most-once (with what to change), which `validate` holds against
/// at-least-once routes.
public struct InstanceDescription: Sendable, Hashable {
    /// The instance's ports; nil means the manifest's.
    public var ports: [PortDeclaration]?
    /// Body schemas of the types the instance adds (names start with the plugin's name and a
    /// dot), by type name; nil means the manifest's.
    public var types: [String: JSONValue]?
    /// Source ports whose upstream confirmation waits for `settled`.
    public var settles: [String]
    /// Sink ports that acknowledge `ok` only once the far side has confirmed (an MQTT PUBACK,
    /// a SIP 2xx, an HTTP 2xx, a completed write).
    public var confirms: [String]
    /// Ports this configuration makes at-most-once, each with why and what to change (a QoS 0
    /// subscription: the broker has let go of a message before the router has it; a QoS 0
    /// publish: nothing confirms it). An at-least-once route cannot start or end at one.
    public var atMostOnce: [String: String]
    /// Ports at-least-once holds through only in part under this configuration, each with the
    /// case it does not cover and what to change (a shared subscription whose session ends
    /// with a router that is killed); `validate` warns on an at-least-once route through one.
    public var cautions: [String: String] = [:]
    /// Source ports (among `settles`) whose peer hands what this router has not settled to
    /// another router when this one is gone (a shared subscription whose sessions the other
    /// routers take over). An at-least-once route settles them only once the first delivery
    /// to each sink has ended, not when the envelope is spooled: what a router that never comes
    /// back had spooled and not yet delivered is then still the peer's to give to another.
    public var redelivers: [String] = []
    /// Sink ports whose `deliver` may run on any thread, including inside an `emit` of any
    /// instance (this one too): the router then delivers on the emitting thread while the route
    /// is idle, rather than handing each envelope to a route worker (ABI sections 3 and 6).
    public var deliversInline: [String] = []
    /// Whether the instance keeps durable state in the router's store (ABI `state_*`), so the
    /// router must open its store even when no route or iiidea needs one (a SIP history).
    public var keepsState: Bool

    /// Creates a description.
    public init(
        ports: [PortDeclaration]? = nil, types: [String: JSONValue]? = nil, settles: [String] = [], confirms: [String] = [],
        atMostOnce: [String: String] = [:]
    ) {
        self.ports = ports
        self.types = types
        self.settles = settles
        self.confirms = confirms
        self.atMostOnce = atMostOnce
        // Set as a property (`description.keepsState = true`): the few instances that keep
        // state say so, the rest never mention it.
        keepsState = false
    }

    /// The description as the JSON `describe` writes.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "settles": .array(settles.map { .string($0) }), "confirms": .array(confirms.map { .string($0) }),
        ]
        if !atMostOnce.isEmpty { object["at_most_once"] = .object(atMostOnce.mapValues { .string($0) }) }
        if !cautions.isEmpty { object["cautions"] = .object(cautions.mapValues { .string($0) }) }
        if !redelivers.isEmpty { object["redelivers"] = .array(redelivers.map { .string($0) }) }
        if !deliversInline.isEmpty { object["delivers_inline"] = .array(deliversInline.map { .string($0) }) }
        if keepsState { object["keeps_state"] = true }
        if let ports { object["ports"] = .array(ports.map(\.json)) }
        if let types { object["types"] = .object(types) }
        return .object(object)
    }

    /// Parses a description and checks it the way a manifest's ports and types are checked.
    public init(parsing bytes: some Collection<UInt8>) throws(ManifestError) {
        let members = try ManifestError.object(parsing: bytes, what: "description")
        if let portValues = members["ports"] {
            // The manifest's own checks serve: a stand-in manifest carries the ports.
            let probe: JSONValue = ["name": "described", "version": "0", "ports": portValues]
            ports = try PluginManifest(parsing: probe.serializedBytes()).ports
        }
        types = try ManifestError.typeSchemas(members["types"], what: "description")
        settles = try Self.portNames(members["settles"], field: "settles")
        confirms = try Self.portNames(members["confirms"], field: "confirms")
        redelivers = try Self.portNames(members["redelivers"], field: "redelivers")
        deliversInline = try Self.portNames(members["delivers_inline"], field: "delivers_inline")
        atMostOnce = try Self.portReasons(members["at_most_once"], field: "at_most_once", meaning: "why they are at-most-once")
        cautions = try Self.portReasons(
            members["cautions"], field: "cautions", meaning: "what at-least-once does not cover there")
        switch members["keeps_state"] {
        case nil: keepsState = false
        case .bool(let value)?: keepsState = value
        default: throw ManifestError(reason: "description field 'keeps_state' must be true or false")
        }
    }

    /// A map of port names to texts (`at_most_once`, `cautions`); empty when absent.
    private static func portReasons(_ value: JSONValue?, field: String, meaning: String) throws(ManifestError) -> [String: String] {
        switch value {
        case nil: return [:]
        case .object(let reasons)? where reasons.values.allSatisfy({ $0.stringValue != nil }):
            return reasons.compactMapValues(\.stringValue)
        default:
            throw ManifestError(reason: "description field '\(field)' must map port names to \(meaning)")
        }
    }

    private static func portNames(_ value: JSONValue?, field: String) throws(ManifestError) -> [String] {
        switch value {
        case nil: return []
        case .array(let values)? where values.allSatisfy({ $0.stringValue != nil }): return values.compactMap(\.stringValue)
        default: throw ManifestError(reason: "description field '\(field)' must be an array of port names")
        }
    }
}

extension PortDeclaration {
    /// The port as manifest JSON.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(name),
            "direction": .string(direction.rawValue),
            "types": .array(types.map { .string($0) }),
        ]
        if let requires { object["requires"] = .string(requires) }
        if !feeds.isEmpty { object["feeds"] = .array(feeds.map { .string($0) }) }
        if !summary.isEmpty { object["description"] = .string(summary) }
        if let preferences { object["preferences"] = preferences }
        return .object(object)
    }
}
