import SwitchyardCore
import SwitchyardPluginKit

extension PushPlugin {
    /// The instance as its configuration makes it (ABI `describe`): the manifest's ports and
    /// types, and `messages` settles when the webhook listens — its HTTP answer waits until the
    /// router has settled the envelope, so on an at-least-once route a 200 means the message is
    /// durable in the spool; and `send` confirms — a message is acknowledged `ok` only on
    /// FCM's 200 for it.
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        InstanceDescription(settles: config["listen"] == nil ? [] : [messagesPort], confirms: [sendPort])
    }
}
