import SwitchyardCore
import SwitchyardPluginKit

extension CorePlugin {
    /// The instance as its configuration makes it (ABI `describe`): the manifest's ports and
    /// types, and `write` confirms when the file is synced (`file: { fsync: true }`) — a line
    /// is then on disk before the delivery is acknowledged. Without fsync an acknowledged line
    /// can still be lost on power loss, so the port promises nothing either way.
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        InstanceDescription(confirms: config["file"]?["fsync"]?.boolValue == true ? ["write"] : [])
    }
}
