import SwitchyardCore
import SwitchyardPluginKit

extension SIPPlugin {
    /// The instance as its configuration makes it (ABI `describe`): the manifest's ports and
    /// types, and `messages` settles — an incoming MESSAGE is answered 200 (or 202) only once
    /// the router has settled its envelope, so on an at-least-once route the answer means the
    /// message is durable in the spool; and `send` confirms — a MESSAGE is acknowledged `ok`
    /// only on the peer's 2xx; and `control` confirms — an action is acknowledged `ok` only once
    /// the registrar granted (or removed) the binding. With `history:` it keeps state in the
    /// router's store, which the router then opens.
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        let history = config["history"].map { $0 != false } ?? false
        // `history: false` has no history ports (a manifest port's `requires` only asks for the key).
        var description = InstanceDescription(
            ports: history ? nil : manifest.ports.filter { $0.name != historyPort && $0.name != historyQueryPiece },
            settles: [messagesPort],
            confirms: [sendPort, controlPort])
        description.keepsState = history
        // An event is emitted once and not settled: a route from it cannot be at-least-once.
        if history {
            description.atMostOnce[historyPort] = "history events are emitted once, without settlement; the store keeps the history itself"
        }
        return description
    }
}
