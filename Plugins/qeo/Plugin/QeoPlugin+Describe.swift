import SwitchyardCore
import SwitchyardPluginKit

extension QeoPlugin {
    /// The instance's types and ports from its QDM files (ABI `describe`).
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription? {
        try QeoTopics(config: config).description
    }
}
