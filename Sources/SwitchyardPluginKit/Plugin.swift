public import SwitchyardCore

/// A Switchyard plugin written in Swift. One value of the conforming type is one plugin
/// instance; the router creates as many as the YAML declares.
///
/// Conform, then export the type with one line (see ``PluginExport``):
///
/// ```swift
/// @_cdecl("switchyard_plugin_entry")
/// public func entry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
///     PluginExport.negotiate(EchoPlugin.self, offer: offer, table: table, capacity: capacity)
/// }
/// ```
///
/// Every method may be called from any thread and must not block for long.
public protocol SwitchyardPlugin: AnyObject, Sendable {
    /// The plugin's self-description: name, version, ports, types, configuration schema.
    static var manifest: PluginManifest { get }

    /// Creates an instance from its configuration (already checked against the manifest's
    /// configuration schema by the router). Throw to refuse it; the message reaches the user.
    init(context: PluginContext, name: String, config: JSONValue) throws

    /// Starts I/O; ``PluginContext/emit(_:on:settleToken:)`` may be used from now on.
    func start() throws

    /// Takes an envelope delivered to a sink port. Call ``Delivery/ack(_:reason:)`` exactly
    /// once, now or later, from any thread.
    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery)

    /// Takes an envelope delivered to a sink port as the router lent it: views of the router's
    /// memory, valid only during this call. Optional; the default copies it and calls
    /// ``deliver(_:on:delivery:)``. A sink whose common case reads a few fields and keeps
    /// only the body's bytes implements it to skip that copy, and calls ``BorrowedEnvelope/copy()``
    /// for everything else.
    func deliver(borrowing envelope: borrowing BorrowedEnvelope, on port: String, delivery: Delivery)

    /// Whether the sink `port` can take another delivery now. Answer false to make the router
    /// hold the envelope and try again — the backpressure that keeps a slow far side from
    /// growing memory (the route's queue fills, and its sources are told to wait). A plugin
    /// that answers false calls ``PluginContext/sinkHasRoom()`` whenever room may have come
    /// back, so the router tries again then rather than after a pause. Optional; the default
    /// always accepts.
    func canAccept(on port: String) -> Bool

    /// Stops producing at sources; deliveries continue. Optional.
    func quiesce()

    /// Stops everything; no context calls after this returns.
    func stop()

    /// A port that got ``EmitResult/full`` may emit again. Optional.
    func resume(port: String)

    /// An envelope emitted with a non-zero settle token has been delivered everywhere (or
    /// dropped). Optional.
    func settled(token: UInt64, outcome: DeliveryOutcome)

    /// `port` is the trigger or the action of iiidea `iiidea`, which is being enabled with
    /// `preferences` (the action's preferences as written; `{}` for a trigger). Throw to
    /// refuse — the message is shown as the reason the iiidea is inactive. Optional; the
    /// default accepts.
    func enablePiece(port: String, iiidea: String, preferences: JSONValue) throws

    /// The iiidea `port` serves was disabled. Optional.
    func disablePiece(port: String, iiidea: String)

    /// Runs the service piece `port` (declared with direction `.service`) for one run of
    /// iiidea `iiidea`: `input` is the trigger's output. Call ``PieceCompletion/succeed(_:)``
    /// or ``PieceCompletion/fail(_:)`` exactly once, now or later, from any thread. Optional;
    /// the default fails.
    func executePiece(port: String, iiidea: String, input: JSONValue, preferences: JSONValue, completion: PieceCompletion)

    /// The ports and types an instance with `config` has, and which of its sources settle,
    /// when they depend on the configuration (Qeo's topics come from its QDM files). Called
    /// while a route file is validated, before any instance exists: read files if needed, but
    /// open no connection. Optional; the default (nil) means the manifest's ports and types.
    static func describe(name: String, config: JSONValue) throws -> InstanceDescription?

    /// The instance configuration type, when the plugin declares one (``PluginConfiguration``):
    /// the router's `validate` then decodes every instance's configuration with it before
    /// anything starts, so a wrong value is reported at its `file:line:column` rather than when
    /// the instance is created. Optional; the default (nil) leaves the checks to `init`.
    static var configuration: (any PluginConfiguration.Type)? { get }

    /// Adopts a changed configuration on reload without stopping, keeping sockets open.
    /// Return true when the instance now runs with `config`; false when this change needs a
    /// restart (nothing changed; the router stops this instance and starts a new one). Throw
    /// when `config` is wrong: nothing changed and the reload rolls back. Optional; the
    /// default answers false.
    func reconfigure(_ config: JSONValue) throws -> Bool

    /// Runs `switchyard PLUGIN command ARGS…` for a command the manifest declares; returns
    /// the exit status. No router runs. Optional; the default prints that there is no such
    /// command and returns 64.
    static func runCommand(_ command: String, arguments: [String], io: CommandIO) -> Int32
}

extension SwitchyardPlugin {
    /// Copies the envelope and calls ``deliver(_:on:delivery:)``.
    public func deliver(borrowing envelope: borrowing BorrowedEnvelope, on port: String, delivery: Delivery) {
        deliver(envelope.copy(), on: port, delivery: delivery)
    }
    /// Always true.
    public func canAccept(on port: String) -> Bool { true }
    /// Does nothing.
    public func quiesce() {}
    /// Does nothing.
    public func resume(port: String) {}
    /// Does nothing.
    public func settled(token: UInt64, outcome: DeliveryOutcome) {}
    /// Accepts.
    public func enablePiece(port: String, iiidea: String, preferences: JSONValue) throws {}
    /// Does nothing.
    public func disablePiece(port: String, iiidea: String) {}
    /// The manifest's ports and types.
    public static func describe(name: String, config: JSONValue) throws -> InstanceDescription? { nil }
    /// None declared.
    public static var configuration: (any PluginConfiguration.Type)? { nil }
    /// Needs a restart.
    public func reconfigure(_ config: JSONValue) throws -> Bool { false }
    /// No such command.
    public static func runCommand(_ command: String, arguments: [String], io: CommandIO) -> Int32 {
        io.writeError("\(io.program): no such command\n")
        return 64
    }
    /// Fails: the plugin has no service pieces.
    public func executePiece(port: String, iiidea: String, input: JSONValue, preferences: JSONValue, completion: PieceCompletion) {
        completion.fail("\(port) is not a service piece")
    }
}

/// How a delivery ended.
public enum DeliveryOutcome: Int32, Sendable {
    /// Delivered; the far side confirmed where the protocol can.
    case ok = 0
    /// Failed for now; worth retrying.
    case retry = 1
    /// Failed for good.
    case reject = 2
}

/// What ``PluginContext/emit(_:on:settleToken:)`` answers.
public enum EmitResult: Int32, Sendable {
    /// Every route took the envelope.
    case ok = 0
    /// The envelope is malformed.
    case invalid = 1
    /// The port is not one of the instance's source ports.
    case unknownPort = 2
    /// A blocking route queue is full: nothing was taken; wait for ``SwitchyardPlugin/resume(port:)``.
    case full = 3
    /// The router is stopping.
    case stopped = 4
    /// Any other failure.
    case failed = 5
}

/// Log levels, those of swift-log.
public enum LogLevel: Int32, Sendable {
    case trace = 0, debug, info, notice, warning, error, critical
}

/// Metric kinds.
public enum MetricKind: Int32, Sendable {
    /// Adds to a counter.
    case counter = 0
    /// Sets a gauge.
    case gauge = 1
    /// Records a value in a histogram.
    case histogram = 2
}

/// Errors a plugin can throw with a message for the user.
public struct PluginError: Error, Sendable, CustomStringConvertible {
    /// The message.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
