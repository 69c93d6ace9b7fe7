import Foundation

extension Sandbox {
    /// `examples/c-plugin/upper.c`: the C plugin of the README, built against the header alone.
    static var upperSource: URL { BuildProducts.packageRoot.appendingPathComponent("examples/c-plugin/upper.c") }

    /// A sandbox with `core` and a freshly compiled `libupper.so`.
    static func withUpperPlugin() throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try CCompiler.compilePlugin(upperSource, to: sandbox.plugins.appendingPathComponent("libupper.so"))
        return sandbox
    }
}
