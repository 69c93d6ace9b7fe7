// libFuzzer entry point for route files: YAML reading, loading and the graph validator, with the
// plugins installed in FUZZ_PLUGINS (built by scripts/fuzz, which sets it to Plugins/). Whatever
// the text, loading ends with a configuration or diagnostics; a diagnostic names the file.
// FUZZ_TRACE=1 prints the diagnostics (for replaying one input).
import Glibc
import SwitchyardConfig
import SwitchyardCore
import SwitchyardRuntime

/// Loaded once: the validator checks instances against the real plugins' schemas and ports.
let validator = GraphValidator(plugins: getenv("FUZZ_PLUGINS").map { PluginLoader.loadDirectory(String(cString: $0)).plugins } ?? [])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let loader = ConfigLoader(environment: ["HOME": "/root", "BROKER": "localhost:1883", "TOKEN": "secret"])
    let (config, diagnostics) = loader.load(sources: [(file: "fuzz.yaml", text: text)])
    for diagnostic in diagnostics {
        precondition(!diagnostic.message.isEmpty, "a diagnostic without a message")
    }
    let (plan, problems) = validator.validate(config)
    if getenv("FUZZ_TRACE") != nil {
        print("plugins: \(validator.plugins.keys.sorted()); plan: \(plan != nil)")
        for diagnostic in diagnostics + problems { print(diagnostic) }
    }
    return 0
}
