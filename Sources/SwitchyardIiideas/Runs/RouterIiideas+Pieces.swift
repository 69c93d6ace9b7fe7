import Dispatch
import SwitchyardConfig
public import SwitchyardCore
internal import SwitchyardRuntime

extension RouterIiideas {
    /// Why a service piece could not be run directly, or what it answered instead of output.
    public struct PieceRunError: Error, Sendable, CustomStringConvertible {
        /// Whether the plugin ran the piece and failed it (as opposed to no such piece).
        public var failed: Bool
        /// What went wrong, naming the instance and the piece.
        public var description: String
    }

    /// Runs service piece `portName` of `instance` once with `input`, outside any iiidea — the
    /// admin API's way to ask a plugin something it serves as a piece (a SIP identity's message
    /// history) — and returns its output. Blocks the calling thread for at most `timeout`: call
    /// it off the async executors (``runServicePiece(instance:port:input:timeout:)`` does).
    public func runServicePieceBlocking(
        instance name: String, port portName: String, input: JSONValue, timeout: Duration
    ) throws(PieceRunError) -> JSONValue {
        let graph = running.graph
        guard let planned = graph.plan.instances.first(where: { $0.name == name }) else {
            throw PieceRunError(failed: false, description: "no instance named '\(name)'")
        }
        guard planned.ports.contains(where: { $0.name == portName && $0.direction == .service }) else {
            // A piece the plugin has, off in this configuration: say which setting turns it on.
            if let declared = (planned.declaredPorts + planned.plugin.manifest.ports).first(where: {
                $0.name == portName && $0.direction == .service
            }),
                let setting = declared.requires
            {
                throw PieceRunError(
                    failed: false,
                    description:
                        "\(name) serves '\(portName)' only with `\(setting):` in its configuration (plugin \(planned.plugin.manifest.name))"
                )
            }
            let pieces = planned.ports.filter { $0.direction == .service }.map(\.name).joined(separator: ", ")
            throw PieceRunError(
                failed: false, description: "\(name) has no service piece '\(portName)' (its pieces: \(pieces.isEmpty ? "none" : pieces))")
        }
        guard !running.isDraining else { throw PieceRunError(failed: false, description: "the router is stopping") }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = UInt64(clamping: max(0, seconds)) &* 1_000_000_000 &+ UInt64(clamping: attoseconds / 1_000_000_000)
        do {
            return try controller.executePiece(
                // ":admin" is no iiidea's id (ids cannot hold a colon): a plugin keeping
                // anything per iiidea keeps this run apart.
                PortReference(instance: name, port: portName), iiidea: ":admin", input: input, preferences: .object([:]),
                timeout: nanoseconds, in: graph)
        } catch {
            throw PieceRunError(failed: true, description: "\(error)")
        }
    }

    /// ``runServicePieceBlocking(instance:port:input:timeout:)`` on a thread of its own, so an
    /// async caller's executor is never blocked while the plugin answers.
    public func runServicePiece(instance: String, port: String, input: JSONValue, timeout: Duration) async throws(PieceRunError)
        -> JSONValue
    {
        try await onOwnThread(named: "service piece") { () throws(PieceRunError) in
            try self.runServicePieceBlocking(instance: instance, port: port, input: input, timeout: timeout)
        }
    }
}
