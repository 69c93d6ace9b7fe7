import Foundation

/// Where the build put the `switchyard` binary and the first-party plugins: the directory of
/// the running test bundle (`.build/debug`, or whatever `--scratch-path` chose).
enum BuildProducts {
    static let directory: URL = {
        if let override = ProcessInfo.processInfo.environment["SWITCHYARD_PRODUCTS"] {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        // The runner is `<products>/switchyardPackageTests.xctest` (Linux) or sits inside it.
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("switchyard").path) { return url }
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }()

    /// The router binary.
    static var switchyard: URL { directory.appendingPathComponent("switchyard") }

    /// A first-party plugin's shared object, e.g. `libcore.so`.
    static func plugin(_ name: String) -> URL { directory.appendingPathComponent("lib\(name).so") }

    /// The package root (for `examples/`).
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}
