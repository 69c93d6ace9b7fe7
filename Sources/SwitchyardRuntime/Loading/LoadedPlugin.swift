package import SwitchyardABI
internal import SwitchyardBridge
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

    /// A plugin whose entry points are `table` (the loader's, or `switchyard test`'s stand-in).
    package init(path: String, abiVersion: UInt32, manifest: PluginManifest, configSchema: Schema, table: PluginTable) {
        self.path = path
        self.abiVersion = abiVersion
        self.manifest = manifest
        self.configSchema = configSchema
        self.manifestJSON = manifest.json
        self.table = table
    }
}

/// The plugin's function table, copied out of the negotiation buffer. The function pointers
/// point into a shared object that is never unloaded. A version 1 plugin filled the first
/// part of the same layout (its entries beyond version 1 are nil).
package struct PluginTable: @unchecked Sendable {
    // Immutable after negotiation: plain C function pointers and a version number.
    let api: sy_plugin_api_v2
    /// The negotiated ABI version: which envelope layout `deliver` takes.
    let version: UInt32

    /// The entry points `api` of a plugin speaking ABI `version`.
    package init(api: sy_plugin_api_v2, version: UInt32) {
        self.api = api
        self.version = version
    }

    /// The envelope as this plugin reads it: a version 1 plugin gets the same memory without
    /// the leading `struct_size` (the layouts are otherwise identical).
    @inline(__always)
    func envelopeForPlugin(_ envelope: UnsafePointer<sy_envelope>) -> UnsafePointer<sy_envelope> {
        guard version == SY_ABI_VERSION_1 else { return envelope }
        return UnsafeRawPointer(envelope).advanced(by: EnvelopeBridge.versionOneOffset).assumingMemoryBound(to: sy_envelope.self)
    }
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
