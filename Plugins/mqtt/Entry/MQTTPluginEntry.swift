import MQTTPlugin

/// The exported entry point of `libmqtt.so`. Alone in its target, so MQTTPlugin links into the
/// test bundle beside the other plugins without a second `switchyard_plugin_entry`; the shared
/// object holds both (the `mqtt` product), and only this symbol is exported.
@_cdecl("switchyard_plugin_entry")
public func switchyardPluginEntry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    negotiateMQTTPlugin(offer, table, capacity)
}
