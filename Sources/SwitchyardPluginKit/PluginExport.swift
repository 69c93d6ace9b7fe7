internal import SwitchyardABI
internal import SwitchyardBridge
internal import SwitchyardCore

/// Connects a ``SwitchyardPlugin`` type to the C ABI: negotiation and the plugin table.
public enum PluginExport {
    /// What one shared object exports: its plugin type and the host table it negotiated.
    /// Each plugin links its own copy of this SDK, so this state is per plugin file.
    struct Registration: @unchecked Sendable {
        // Host pointers live for the process; the type is immutable.
        let type: any SwitchyardPlugin.Type
        let host: UnsafePointer<sy_host_api_v2>
        let manifest: UnsafeBufferPointer<UInt8>
    }

    nonisolated(unsafe) static var registration: Registration?

    /// The ABI versions this SDK implements.
    public static let supportedVersions: [UInt32] = [SY_ABI_VERSION_2]

    /// Answers the host's offer for plugin type `type`: picks ABI version 2 when offered,
    /// fills the plugin table and returns the version, or returns 0 to refuse. Call it from the
    /// plugin's exported `switchyard_plugin_entry` function.
    public static func negotiate(
        _ type: any SwitchyardPlugin.Type,
        offer: UnsafeRawPointer?,
        table: UnsafeMutableRawPointer?,
        capacity: Int
    ) -> UInt32 {
        guard let offer = offer?.assumingMemoryBound(to: sy_offer.self), let table,
            let versions = offer.pointee.versions, let hostTables = offer.pointee.host_tables
        else { return 0 }
        let count = Int(offer.pointee.version_count)
        guard let index = (0..<count).first(where: { versions[$0] == SY_ABI_VERSION_2 }),
            capacity >= MemoryLayout<sy_plugin_api_v2>.size,
            let hostTable = hostTables[index]?.assumingMemoryBound(to: sy_host_api_v2.self),
            Int(hostTable.pointee.struct_size) >= PluginContext.hostTableBaseSize
        else { return 0 }

        if registration == nil {
            // The manifest must outlive every call: copy it once into memory never freed.
            let bytes = type.manifest.json.serializedBytes()
            let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
            _ = storage.initialize(from: bytes)
            registration = Registration(type: type, host: hostTable, manifest: UnsafeBufferPointer(storage))
        }
        guard let registration else { return 0 }

        let plugin = table.assumingMemoryBound(to: sy_plugin_api_v2.self)
        plugin.pointee.struct_size = UInt32(MemoryLayout<sy_plugin_api_v2>.size)
        plugin.pointee.manifest = sy_bytes(registration.manifest)
        plugin.pointee.create = { context, name, config, instanceOut, error in
            PluginExport.create(context: context, name: name, config: config, instanceOut: instanceOut, error: error)
        }
        plugin.pointee.start = { instance, errorBuffer in
            guard let box = PluginExport.box(instance) else { return SY_ERR_INVALID }
            do {
                try box.plugin.start()
                return SY_OK
            } catch {
                PluginExport.write("\(error)", to: errorBuffer)
                return SY_ERR_FAILED
            }
        }
        plugin.pointee.deliver = { instance, port, envelope, deliveryID in
            guard let box = PluginExport.box(instance), let envelope, let borrowed = BorrowedEnvelope(envelope) else {
                return SY_ERR_INVALID
            }
            guard let portName = box.sinkPort(named: port) else { return SY_ERR_UNKNOWN_PORT }
            if !box.plugin.canAccept(on: portName) {
                box.context.refusedAsFull.mark()
                // Room that came back between the check and the mark was announced to no one.
                guard box.plugin.canAccept(on: portName) else { return SY_ERR_FULL }
            }
            box.plugin.deliver(borrowing: borrowed, on: portName, delivery: Delivery(id: deliveryID, context: box.context))
            return SY_OK
        }
        plugin.pointee.stop = { instance in PluginExport.box(instance)?.plugin.stop() }
        plugin.pointee.destroy = { instance in
            guard let instance else { return }
            Unmanaged<InstanceBox>.fromOpaque(instance).release()
        }
        plugin.pointee.quiesce = { instance in PluginExport.box(instance)?.plugin.quiesce() }
        plugin.pointee.resume = { instance, port in PluginExport.box(instance)?.plugin.resume(port: port.string) }
        plugin.pointee.settled = { instance, token, outcome in
            PluginExport.box(instance)?.plugin.settled(token: token, outcome: DeliveryOutcome(rawValue: outcome) ?? .reject)
        }
        plugin.pointee.piece_enable = { instance, port, iiidea, preferences, errorBuffer in
            guard let box = PluginExport.box(instance) else { return SY_ERR_INVALID }
            do {
                let parsed = preferences.length == 0 ? JSONValue.object([:]) : try JSONValue(parsing: preferences.array)
                try box.plugin.enablePiece(port: port.string, iiidea: iiidea.string, preferences: parsed)
                return SY_OK
            } catch {
                PluginExport.write("\(error)", to: errorBuffer)
                return SY_ERR_FAILED
            }
        }
        plugin.pointee.piece_execute = { instance, port, iiidea, input, preferences, token in
            guard let box = PluginExport.box(instance) else { return SY_ERR_INVALID }
            let parsedInput = (try? JSONValue(parsing: input.array)) ?? .null
            let parsedPreferences = (try? JSONValue(parsing: preferences.array)) ?? .object([:])
            box.plugin.executePiece(
                port: port.string, iiidea: iiidea.string, input: parsedInput, preferences: parsedPreferences,
                completion: PieceCompletion(token: token, context: box.context))
            return SY_OK
        }
        plugin.pointee.piece_disable = { instance, port, iiidea in
            PluginExport.box(instance)?.plugin.disablePiece(port: port.string, iiidea: iiidea.string)
        }
        plugin.pointee.describe = { name, config, output, errorBuffer in
            PluginExport.describe(name: name, config: config, output: output, error: errorBuffer)
        }
        plugin.pointee.reconfigure = { instance, config, errorBuffer in
            guard let box = PluginExport.box(instance) else { return SY_ERR_INVALID }
            do {
                let configuration = try JSONValue(parsing: config.array)
                return try box.plugin.reconfigure(configuration) ? SY_OK : SY_ERR_UNSUPPORTED
            } catch {
                PluginExport.write("\(error)", to: errorBuffer)
                return SY_ERR_INVALID
            }
        }
        if !type.manifest.commands.isEmpty {
            plugin.pointee.command = { call in
                guard let call else { return 70 }
                return PluginExport.runCommand(call)
            }
        }
        return SY_ABI_VERSION_2
    }

    final class InstanceBox: Sendable {
        let plugin: any SwitchyardPlugin
        let context: PluginContext
        /// The manifest's sink port names (a plugin has a few), with their UTF-8.
        private let sinkPorts: [(name: String, bytes: [UInt8])]

        init(plugin: any SwitchyardPlugin, context: PluginContext, sinkPorts: [String]) {
            self.plugin = plugin
            self.context = context
            self.sinkPorts = sinkPorts.map { ($0, Array($0.utf8)) }
        }

        /// The sink port `name` names, found by comparing bytes: no string made, hashed or
        /// allocated per delivery.
        func sinkPort(named name: sy_bytes) -> String? {
            for index in sinkPorts.indices where name.equals(sinkPorts[index].bytes) { return sinkPorts[index].name }
            return nil
        }
    }

    static func box(_ instance: UnsafeMutableRawPointer?) -> InstanceBox? {
        guard let instance else { return nil }
        return Unmanaged<InstanceBox>.fromOpaque(instance).takeUnretainedValue()
    }

    static func create(
        context: OpaquePointer?,
        name: sy_bytes,
        config: sy_bytes,
        instanceOut: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
        error errorBuffer: sy_error_buffer
    ) -> Int32 {
        guard let registration, let context, let instanceOut else { return SY_ERR_INVALID }
        let configuration: JSONValue
        do {
            configuration = try JSONValue(parsing: config.array)
        } catch {
            write("configuration is not JSON: \(error)", to: errorBuffer)
            return SY_ERR_INVALID
        }
        let pluginContext = PluginContext(host: registration.host, context: context)
        do {
            let plugin = try registration.type.init(context: pluginContext, name: name.string, config: configuration)
            let sinkPorts = registration.type.manifest.ports.filter { $0.direction == .sink }.map(\.name)
            let box = InstanceBox(plugin: plugin, context: pluginContext, sinkPorts: sinkPorts)
            instanceOut.pointee = Unmanaged.passRetained(box).toOpaque()
            return SY_OK
        } catch {
            write("\(error)", to: errorBuffer)
            return SY_ERR_INVALID
        }
    }

    static func describe(name: sy_bytes, config: sy_bytes, output: sy_writer, error errorBuffer: sy_error_buffer) -> Int32 {
        guard let registration else { return SY_ERR_INVALID }
        do {
            let configuration = try JSONValue(parsing: config.array)
            // The configuration type's checks run here, before anything starts, so an error
            // carries its JSON Pointer to `validate` (which maps it to file:line:column).
            if let configurationType = registration.type.configuration { _ = try configurationType.init(config: configuration) }
            let description = try registration.type.describe(name: name.string, config: configuration) ?? InstanceDescription()
            let bytes = description.json.serializedBytes()
            return bytes.withUnsafeBufferPointer { buffer in output.write?(output.target, sy_bytes(buffer)) ?? SY_ERR_INVALID }
        } catch {
            write("\(error)", to: errorBuffer)
            return SY_ERR_INVALID
        }
    }

    static func runCommand(_ call: UnsafePointer<sy_command_call>) -> Int32 {
        guard let registration else { return 70 }
        let raw = call.pointee
        var arguments: [String] = []
        if let values = raw.arguments {
            for index in 0..<raw.argument_count { arguments.append(values[index].string) }
        }
        let io = CommandIO(
            program: raw.program.string, input: raw.stdin_fd, output: raw.stdout_fd, error: raw.stderr_fd)
        return registration.type.runCommand(raw.name.string, arguments: arguments, io: io)
    }

    static func write(_ message: String, to buffer: sy_error_buffer) {
        guard let data = buffer.data, let length = buffer.length else { return }
        let bytes = Array(message.utf8.prefix(buffer.capacity))
        bytes.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { data.update(from: base, count: bytes.count) }
        }
        length.pointee = bytes.count
    }
}
