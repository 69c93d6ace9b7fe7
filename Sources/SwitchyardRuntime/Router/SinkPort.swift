/// A sink port a route delivers to.
struct SinkPort: Sendable {
    let instance: InstanceRuntime
    let name: String
    let nameBytes: [UInt8]
    let counter: SinkPortCounter

    init(instance: InstanceRuntime, name: String) {
        self.instance = instance
        self.name = name
        nameBytes = Array(name.utf8)
        counter = instance.sinkCounter(name)
    }

    /// Whether the plugin lets the router call its `deliver` on the emitting thread (read once,
    /// when a route is made: ``RouteRuntime/deliversInline``).
    var deliversInline: Bool { instance.inlineSinkPorts.contains(name) }

    /// `instance.port`: how logs, the spool and dead letters name the sink.
    var qualifiedName: String { instance.name + "." + name }
}
