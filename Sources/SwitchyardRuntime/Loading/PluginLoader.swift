internal import SwitchyardABI
internal import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Loads plugin shared objects from one directory — never from system paths — with
/// `RTLD_NOW | RTLD_LOCAL`, negotiates the ABI and checks what the plugin hands back.
/// Loaded files are never unloaded (`dlclose` is unsafe for Swift images).
public enum PluginLoader {
    /// The ABI versions this router supports.
    public static let supportedVersions: [UInt32] = [SY_ABI_VERSION_2, SY_ABI_VERSION_1]

    /// Loads every `lib*.so` of `directory`. Files that fail are returned as errors; the rest
    /// load. The directory itself must not be writable by other users.
    public static func loadDirectory(_ directory: String) -> (plugins: [LoadedPlugin], errors: [PluginLoadError]) {
        let absolute = absolutePath(directory)
        if let problem = writableByOthers(absolute, isDirectory: true) {
            return ([], [PluginLoadError(path: absolute, reason: problem)])
        }
        guard let handle = opendir(absolute) else {
            return ([], [PluginLoadError(path: absolute, reason: "cannot open plugin directory: \(String(cString: strerror(errno)))")])
        }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name.hasPrefix("lib"), name.hasSuffix(".so") { names.append(name) }
        }
        closedir(handle)
        var plugins: [LoadedPlugin] = []
        var errors: [PluginLoadError] = []
        for name in names.sorted() {
            do {
                let plugin = try load(file: absolute + "/" + name)
                if let clash = plugins.first(where: { $0.manifest.name == plugin.manifest.name }) {
                    errors.append(
                        PluginLoadError(path: plugin.path, reason: "plugin name '\(plugin.manifest.name)' is already used by \(clash.path)")
                    )
                    continue
                }
                plugins.append(plugin)
            } catch {
                errors.append(error)
            }
        }
        return (plugins, errors)
    }

    /// The smallest table accepted per version: for version 1 everything up to `settled` (the
    /// piece entries came later and are optional); for version 2 everything up to
    /// `piece_execute` (the entries new in version 2 are optional, so none is needed).
    static func baseTableSize(version: UInt32) -> Int {
        if version == SY_ABI_VERSION_1 {
            return MemoryLayout<sy_plugin_api_v1>.offset(of: \.piece_enable) ?? MemoryLayout<sy_plugin_api_v1>.size
        }
        return MemoryLayout<sy_plugin_api_v2>.offset(of: \.describe) ?? MemoryLayout<sy_plugin_api_v2>.size
    }

    /// Loads one plugin file.
    public static func load(file: String) throws(PluginLoadError) -> LoadedPlugin {
        let path = absolutePath(file)
        if let problem = writableByOthers(path, isDirectory: false) { throw PluginLoadError(path: path, reason: problem) }
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty, let problem = writableByOthers(directory, isDirectory: true) {
            throw PluginLoadError(path: path, reason: "its directory \(directory): \(problem)")
        }
        guard let library = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let message = dlerror().map { String(cString: $0) } ?? "unknown error"
            throw PluginLoadError(path: path, reason: "dlopen failed: \(message)")
        }
        guard let symbol = dlsym(library, SY_ENTRY_SYMBOL) else {
            throw PluginLoadError(path: path, reason: "it does not export the entry symbol '\(SY_ENTRY_SYMBOL)'")
        }
        let entry = unsafeBitCast(symbol, to: sy_entry_fn.self)
        return try negotiate(entry: entry, path: path)
    }

    /// Runs the negotiation with an entry function and checks the result (used for files and,
    /// in tests, for entry points linked into the test binary).
    static func negotiate(entry: sy_entry_fn, path: String) throws(PluginLoadError) -> LoadedPlugin {
        let offered = supportedVersions.map(String.init).joined(separator: ", ")
        // Zero-initialised and sized for the newest table: absent entries stay nil. A version 1
        // plugin fills the first part, which has the same layout.
        var table = sy_plugin_api_v2()
        let chosen = withUnsafeMutableBytes(of: &table) { buffer in
            HostTable.offer.withOffer { offer in entry(offer, buffer.baseAddress, buffer.count) }
        }
        guard chosen != 0 else {
            throw PluginLoadError(
                path: path,
                reason:
                    "ABI negotiation failed: the plugin accepts none of the offered versions [\(offered)] (this router supports \(offered))"
            )
        }
        guard supportedVersions.contains(chosen) else {
            throw PluginLoadError(
                path: path,
                reason: "ABI negotiation failed: the plugin chose version \(chosen), which was not offered (offered [\(offered)])"
            )
        }
        let baseSize = Self.baseTableSize(version: chosen)
        guard Int(table.struct_size) >= baseSize else {
            throw PluginLoadError(
                path: path,
                reason: "plugin table for ABI \(chosen) is \(table.struct_size) bytes, expected at least \(baseSize)"
            )
        }
        // Entries a plugin built against an older header did not know stay absent, and a
        // version 1 plugin has none of version 2's, whatever it wrote past its table.
        let size = chosen == SY_ABI_VERSION_1 ? min(Int(table.struct_size), MemoryLayout<sy_plugin_api_v1>.size) : Int(table.struct_size)
        func reaches(_ entry: PartialKeyPath<sy_plugin_api_v2>) -> Bool {
            guard let offset = MemoryLayout<sy_plugin_api_v2>.offset(of: entry) else { return false }
            return size >= offset + MemoryLayout<UnsafeRawPointer>.size
        }
        if !reaches(\.piece_enable) { table.piece_enable = nil }
        if !reaches(\.piece_disable) { table.piece_disable = nil }
        if !reaches(\.piece_execute) { table.piece_execute = nil }
        if !reaches(\.describe) { table.describe = nil }
        if !reaches(\.reconfigure) { table.reconfigure = nil }
        if !reaches(\.command) { table.command = nil }
        var missing: [String] = []
        if table.manifest.data == nil || table.manifest.length == 0 { missing.append("manifest") }
        if table.create == nil { missing.append("create") }
        if table.start == nil { missing.append("start") }
        if table.deliver == nil { missing.append("deliver") }
        if table.stop == nil { missing.append("stop") }
        if table.destroy == nil { missing.append("destroy") }
        guard missing.isEmpty else {
            throw PluginLoadError(path: path, reason: "plugin table lacks mandatory entries: \(missing.joined(separator: ", "))")
        }
        let manifestBytes = Array(UnsafeBufferPointer(start: table.manifest.data, count: table.manifest.length))
        let manifest: PluginManifest
        let schema: Schema
        do {
            manifest = try PluginManifest(parsing: manifestBytes)
            schema = try Schema(json: manifest.config)
        } catch let error as ManifestError {
            throw PluginLoadError(path: path, reason: "invalid manifest: \(error)")
        } catch {
            throw PluginLoadError(path: path, reason: "invalid manifest: config \(error)")
        }
        return LoadedPlugin(
            path: path, abiVersion: chosen, manifest: manifest, configSchema: schema, table: PluginTable(api: table, version: chosen))
    }

    /// A reason when `path` (or, for a file, its mode) lets users other than its owner write it.
    static func writableByOthers(_ path: String, isDirectory: Bool) -> String? {
        var status = stat()
        guard stat(path, &status) == 0 else { return "cannot stat: \(String(cString: strerror(errno)))" }
        let isDirectoryNode = (status.st_mode & S_IFMT) == S_IFDIR
        if isDirectory, !isDirectoryNode { return "not a directory" }
        if !isDirectory, (status.st_mode & S_IFMT) != S_IFREG { return "not a regular file" }
        let mode = status.st_mode & 0o777
        if mode & 0o002 != 0 {
            return "\(isDirectory ? "directory" : "file") is writable by every user (mode \(String(mode, radix: 8))); run chmod o-w on it"
        }
        if mode & 0o020 != 0 {
            return "\(isDirectory ? "directory" : "file") is writable by its group (mode \(String(mode, radix: 8))); run chmod g-w on it"
        }
        if status.st_uid != getuid(), status.st_uid != 0 {
            return "owned by uid \(status.st_uid), neither this user (\(getuid())) nor root"
        }
        return nil
    }

    static func absolutePath(_ path: String) -> String {
        if path.hasPrefix("/") { return normalize(path) }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return normalize(cwd + "/" + path)
    }

    static func normalize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }
}
