internal import SwitchyardABI
public import SwitchyardCore

/// A plugin shared object that was loaded, negotiated and checked.
public final class LoadedPlugin: Sendable {
    /// Absolute path of the file.
    public let path: String
    /// The negotiated ABI version.
    public let abiVersion: UInt32
    /// The parsed manifest.
    public let manifest: PluginManifest
    /// The compiled configuration schema.
    public let configSchema: Schema
    /// The manifest's raw JSON (for `plugins inspect`).
    public let manifestJSON: JSONValue
    let table: PluginTable

    init(path: String, abiVersion: UInt32, manifest: PluginManifest, configSchema: Schema, table: PluginTable) {
        self.path = path
        self.abiVersion = abiVersion
        self.manifest = manifest
        self.configSchema = configSchema
        self.manifestJSON = manifest.json
        self.table = table
    }
}

/// The plugin's function table, copied out of the negotiation buffer. The function pointers
/// point into a shared object that is never unloaded.
struct PluginTable: @unchecked Sendable {
    let api: sy_plugin_api_v1
}

/// Why a plugin file was refused.
public struct PluginLoadError: Error, Sendable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// Why.
    public var reason: String

    /// Creates the error.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "refused plugin \(path): \(reason)" }
}
