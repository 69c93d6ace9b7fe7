import SIPPlugin

/// The exported entry point of `libsip.so`. Alone in its target, so SIPPlugin links into the
/// test bundle beside the other plugins without a second `switchyard_plugin_entry`; the shared
/// object holds both (the `sip` product), and only this symbol is exported.
@_cdecl("switchyard_plugin_entry")
public func switchyardPluginEntry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    negotiateSIPPlugin(offer, table, capacity)
}
