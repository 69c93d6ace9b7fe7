#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where a path written in a route file points: a relative one is taken from the folder of the
/// file that holds it, as Compose and systemd do, so a route folder runs the same from any
/// working directory.
public enum RouteFilePath {
    /// `path` from the folder of `file` (an absolute path as it is). The result is absolute
    /// when the working directory can be read.
    public static func resolve(_ path: String, besideFile file: String) -> String {
        guard !path.isEmpty, !path.hasPrefix("/") else { return path }
        return folder(of: file) + "/" + path
    }

    /// The absolute folder of `file` (the working directory for a file without one).
    public static func folder(of file: String) -> String {
        var folder = ""
        if let slash = file.lastIndex(of: "/") { folder = String(file[..<slash]) }
        if file.hasPrefix("/") { return folder.isEmpty ? "/" : folder }
        let working = workingDirectory()
        return folder.isEmpty ? working : working + "/" + folder
    }

    static func workingDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
