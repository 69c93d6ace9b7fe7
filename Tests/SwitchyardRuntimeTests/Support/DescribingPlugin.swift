import SwitchyardABI
import SwitchyardBridge
import SwitchyardCore

@testable import SwitchyardRuntime

// A version 2 plugin whose describe() does what its instance configuration says, to drive the
// validator through every answer a real plugin may give (ABI section 6):
//   fail: "MESSAGE"     refuses with MESSAGE (which may start with a JSON Pointer)
//   describe: {...}     writes that description
//   raw: "TEXT"         writes TEXT as it is (not necessarily JSON)
//   huge: true          writes until the host refuses (more than the host's bound)
//   lengthWithoutBytes  writes a view with a length and no bytes
// Its instances are the fake plugin's, reading what is delivered as version 2 envelopes.

nonisolated(unsafe) let describingManifest = processLifetimeBytes(
    #"""
    {"name": "desc", "version": "1.0.0",
     "ports": [{"name": "out", "direction": "source", "types": ["*"]}, {"name": "in", "direction": "sink", "types": ["*"]}],
     "config": {"type": "object"}}
    """#)

/// The describe() entry of the describing plugin.
func describeFromConfig(_ config: sy_bytes, _ writer: sy_writer, _ error: sy_error_buffer) -> Int32 {
    guard let write = writer.write, let json = try? JSONValue(parsing: config.array) else { return SY_ERR_INVALID }
    func emit(_ bytes: [UInt8]) -> Int32 { bytes.withUnsafeBufferPointer { write(writer.target, sy_bytes($0)) } }
    if let message = json["fail"]?.stringValue {
        let bytes = Array(message.utf8.prefix(error.capacity))
        bytes.withUnsafeBufferPointer { source in
            if let data = error.data, let base = source.baseAddress { data.update(from: base, count: source.count) }
        }
        error.length?.pointee = bytes.count
        return SY_ERR_INVALID
    }
    if let description = json["describe"] { return emit(description.serializedBytes()) }
    if let raw = json["raw"]?.stringValue { return emit(Array(raw.utf8)) }
    if json["lengthWithoutBytes"] != nil { return write(writer.target, sy_bytes(data: nil, length: 5)) }
    if json["huge"] != nil {
        let chunk = [UInt8](repeating: 0x20, count: 1 << 20)
        for _ in 0..<64 {
            let status = emit(chunk)
            if status != SY_OK { return status }
        }
        return SY_OK
    }
    return emit(Array("{}".utf8))
}

/// The entry function of the describing plugin: the fake's entries in a version 2 table.
let describingEntry: sy_entry_fn = { _, table, capacity in
    guard let table, capacity >= MemoryLayout<sy_plugin_api_v2>.size else { return 0 }
    fillFakeTable(table, manifest: describingManifest)
    let api = table.assumingMemoryBound(to: sy_plugin_api_v2.self)
    api.pointee.struct_size = UInt32(MemoryLayout<sy_plugin_api_v2>.size)
    api.pointee.describe = { _, config, writer, error in describeFromConfig(config, writer, error) }
    api.pointee.deliver = { handle, port, envelope, deliveryID in
        fakeDeliver(handle, port: port, deliveryID: deliveryID) { envelope.flatMap { EnvelopeBridge.envelope(from: $0) } }
    }
    return SY_ABI_VERSION_2
}

/// Negotiates with the describing plugin.
func loadDescribingPlugin() throws -> LoadedPlugin {
    try PluginLoader.negotiate(entry: describingEntry, path: "/fake/libdesc.so")
}
