/// A sink port a route delivers to.
struct SinkPort: Sendable {
    let instance: InstanceRuntime
    let name: String
    let nameBytes: [UInt8]
    let counter: SinkPortCounter
    /// Whether the plugin lets the router call its `deliver` on the emitting thread.
    let deliversInline: Bool

    init(instance: InstanceRuntime, name: String) {
        self.instance = instance
        self.name = name
        nameBytes = Array(name.utf8)
        counter = instance.sinkCounter(name)
        deliversInline = instance.inlineSinkPorts.contains(name)
    }

    /// `instance.port`: how logs, the spool and dead letters name the sink.
    var qualifiedName: String { instance.name + "." + name }
}
