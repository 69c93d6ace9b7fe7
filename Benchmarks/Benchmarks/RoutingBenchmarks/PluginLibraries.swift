import CBenchSink
import CBenchSource
import SwitchyardABI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The two benchmark plugin libraries. SwiftPM builds them next to this executable (it links
/// against them, which also makes the bench_* control functions directly callable), so the
/// router's `PluginLoader.load(file:)` is given those very files: `dlopen` then returns the
/// handle of the already-loaded library, and the plugin state the control functions touch is
/// the state the router's instances use.
enum PluginLibraries {
    /// The directory of this executable (the build products directory).
    static let directory: String = {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { fatalError("cannot read /proc/self/exe: \(String(cString: strerror(errno)))") }
        let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
    }()

    static var source: String { directory + "/libbenchsource.so" }
    static var sink: String { directory + "/libbenchsink.so" }

    /// Checks that `path` is the library this process already has loaded (same object, so
    /// the same globals), and returns its `switchyard_plugin_entry`.
    static func entry(of path: String) -> sy_entry_fn {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) else {
            fatalError(
                "\(path) is not the plugin library this benchmark was linked against: \(dlerror().map { String(cString: $0) } ?? "?")")
        }
        guard let symbol = dlsym(handle, SY_ENTRY_SYMBOL) else { fatalError("\(path) does not export \(SY_ENTRY_SYMBOL)") }
        return unsafeBitCast(symbol, to: sy_entry_fn.self)
    }
}
