import SwitchyardCore
import SwitchyardPluginKit

extension SIPPlugin {
    /// The instance as its configuration makes it (ABI `describe`): the manifest's ports and
    /// types, and `messages` settles — an incoming MESSAGE is answered 200 (or 202) only once
    /// the router has settled its envelope, so on an at-least-once route the answer means the
    /// message is durable in the spool; and `send` confirms — a MESSAGE is acknowledged `ok`
    /// only on the peer's 2xx; and `control` confirms — an action is acknowledged `ok` only once
    /// the registrar granted (or removed) the binding.
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        InstanceDescription(settles: [messagesPort], confirms: [sendPort, controlPort])
    }
}
