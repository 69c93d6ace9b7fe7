import BLEPlugin

/// The exported entry point of `libble.so`, alone in its target (as MQTTPluginEntry), so
/// BLEPlugin links into the test bundle beside the other plugins.
@_cdecl("switchyard_plugin_entry")
public func switchyardPluginEntry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    negotiateBLEPlugin(offer, table, capacity)
}
