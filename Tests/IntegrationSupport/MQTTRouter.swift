import Foundation

/// The router with `core` and `mqtt` as the MQTT suites run it, and what their brokers say
/// about it. Separate from those suites because the scale-out and partition suites, in
/// targets of their own, start the same router.
enum MQTTRouter {
    /// A sandbox with `core` and `mqtt` installed.
    static func sandbox() throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("mqtt")
        return sandbox
    }

    /// `switchyard run routes --plugins plugins` in the sandbox.
    static func run(_ sandbox: Sandbox, environment: [String: String] = [:], arguments: [String] = []) throws -> RouterProcess {
        try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path] + arguments, in: sandbox.root, environment: environment)
    }

    /// The client ids of instance `a`, in the order `broker` saw them connect.
    static func clientIDs(at broker: Mosquitto) -> [String] {
        broker.logText.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: " as switchyard-a-") else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map { "switchyard-a-" + $0 }
        }
    }
}
