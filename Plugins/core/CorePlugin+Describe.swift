import SwitchyardCore
import SwitchyardPluginKit

extension CorePlugin {
    /// The instance as its configuration makes it (ABI `describe`): the manifest's ports and
    /// types, and `write` confirms when the file is synced (`file: { fsync: true }`) — a line
    /// is then on disk before the delivery is acknowledged. Without fsync an acknowledged line
    /// can still be lost on power loss, so the port promises nothing either way.
    ///
    /// An unsynced `write` is one buffered write and a flush — no longer than the bare
    /// endpoint's own write — so the router may deliver it on the emitting thread
    /// (`delivers_inline`); a synced one waits for the disk, and a `print` for a terminal that
    /// may not be reading, so those stay on the route workers.
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        let syncs = config["file"]?["fsync"]?.boolValue == true
        var description = InstanceDescription(confirms: syncs ? ["write"] : [])
        if !syncs { description.deliversInline = ["write"] }
        return description
    }
}
