public import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads route files (one file, or every `*.yaml`/`*.yml` of a directory, merged) into a
/// ``GraphConfig``, collecting every problem with its position rather than stopping at the
/// first.
///
/// The loader owns what comes from outside: the files, and the environment that `${VAR}` values
/// are expanded from. What the YAML means is decided by `RouteFileMerger` (one load's config and
/// problems), which hands routes and iiideas to `RouteDecoder` and `IiideaDecoder`.
public struct ConfigLoader: Sendable {
    /// Default queue capacity per route.
    public static let defaultQueueSize = 1024
    /// Default bytes an `on_full: spool` route may hold on disk: 1 GiB.
    public static let defaultSpoolLimit = 1 << 30
    /// How long `dedupe: { key: … }` remembers a key when it gives no `window`: longer than a
    /// broker's redelivery after a failover takes.
    public static let defaultDedupeWindow: UInt64 = 10 * 60 * 1_000_000_000
    /// Runs kept per iiidea unless `iiidea_history.keep` says otherwise.
    public static let defaultIiideaHistory = 1000
    /// Where the spool lives unless `spool.path` says otherwise.
    public static let defaultSpoolPath = "state/spool.db"

    /// Where `${VAR}` values come from.
    public var environment: [String: String]

    /// Creates a loader.
    public init(environment: [String: String]) { self.environment = environment }

    /// The route files at `path`: the file itself, or the sorted YAML files of a directory.
    public static func routeFiles(at path: String) throws(Diagnostic) -> [String] {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw Diagnostic("cannot read '\(path)': \(String(cString: strerror(errno)))", at: nil)
        }
        guard (status.st_mode & S_IFMT) == S_IFDIR else {
            guard (status.st_mode & S_IFMT) == S_IFREG else {
                throw Diagnostic(
                    "'\(path)' is \(Self.kindName(of: status.st_mode)), not a regular file or a folder of route files", at: nil)
            }
            return [path]
        }
        guard let directory = opendir(path) else {
            throw Diagnostic("cannot open directory '\(path)': \(String(cString: strerror(errno)))", at: nil)
        }
        defer { closedir(directory) }
        var files: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if (name.hasSuffix(".yaml") || name.hasSuffix(".yml")) && !name.hasPrefix(".") {
                files.append(path.hasSuffix("/") ? path + name : path + "/" + name)
            }
        }
        guard !files.isEmpty else { throw Diagnostic("no route files (*.yaml) in '\(path)'", at: nil) }
        return files.sorted()
    }

    /// Loads and merges the route files at `path`.
    public func load(path: String) -> (GraphConfig, [Diagnostic]) {
        let files: [String]
        do {
            files = try Self.routeFiles(at: path)
        } catch {
            return (GraphConfig(), [error])
        }
        var sources: [(file: String, text: String)] = []
        var diagnostics: [Diagnostic] = []
        for file in files {
            do {
                sources.append((file, try Self.readText(file)))
            } catch {
                diagnostics.append(error)
            }
        }
        let (config, more) = load(sources: sources)
        var merged = config
        merged.files = files
        return (merged, diagnostics + more)
    }

    /// Loads and merges route files given as text (what tests use).
    public func load(sources: [(file: String, text: String)]) -> (GraphConfig, [Diagnostic]) {
        var merger = RouteFileMerger()
        let reader = YAMLReader(environment: environment)
        for (file, text) in sources {
            merger.config.files.append(file)
            guard let root = reader.read(text, file: file, diagnostics: &merger.diagnostics, secrets: &merger.config.secrets) else {
                continue
            }
            merger.merge(root, file: file)
        }
        return (merger.config, merger.diagnostics.map { $0.redacting(merger.config.secrets) })
    }

    /// The largest `queue.size`: a route queue holds envelopes in memory.
    public static let maximumQueueSize = 1_048_576

    /// The largest route file read: a route file is configuration, and it is read whole.
    public static let maximumFileSize = 16 * 1024 * 1024

    static func readText(_ file: String) throws(Diagnostic) -> String {
        // Non-blocking, so opening a FIFO does not wait for a writer; only a regular file is read.
        let descriptor = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw Diagnostic("cannot read '\(file)': \(String(cString: strerror(errno)))", at: nil)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw Diagnostic("cannot read '\(file)': \(String(cString: strerror(errno)))", at: nil)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw Diagnostic(
                "'\(file)' is \(Self.kindName(of: status.st_mode)), not a regular file; route files are regular files", at: nil)
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Diagnostic("cannot read '\(file)': \(String(cString: strerror(errno)))", at: nil) }
            if count == 0 { break }
            guard bytes.count + count <= maximumFileSize else {
                throw Diagnostic("'\(file)' is larger than \(maximumFileSize / (1024 * 1024)) MiB; route files are read whole", at: nil)
            }
            bytes.append(contentsOf: buffer[0..<count])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            // Where: the first byte that does not decode.
            var decoded = 0
            var iterator = bytes.makeIterator()
            var decoder = UTF8()
            decoding: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): decoded += String(scalar).utf8.count
                case .emptyInput, .error: break decoding
                }
            }
            let place = YAMLReader.position(ofByte: decoded, in: String(decoding: bytes.prefix(decoded), as: UTF8.self))
            throw Diagnostic(
                "not UTF-8 text (byte 0x\(String(bytes[min(decoded, bytes.count - 1)], radix: 16)) here); a route file is UTF-8 text",
                at: SourceLocation(file: file, line: place.line, column: place.column))
        }
        return text
    }

    /// What a file that is not a regular one is, for the error naming it.
    static func kindName(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a directory"
        default: "not a regular file"
        }
    }

    /// The levels `log_level:` accepts, those of swift-log.
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Whether `text` may name an instance or an iiidea: letters, digits, '-' and '_' only, so
    /// that a port (`instance.port`) splits at its dot.
    static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
    }
}
