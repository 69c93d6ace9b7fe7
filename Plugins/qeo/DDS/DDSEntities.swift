import CCycloneDDS
public import QeoQDM
public import SwitchyardCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A Cyclone DDS failure: what was attempted and Cyclone's return code text.
public struct DDSError: Error, Sendable, CustomStringConvertible {
    public var description: String

    /// `what` failed with Cyclone's `code`; `hint` says what usually causes it, where Cyclone's
    /// own word for it (often a bare "Error") does not.
    init(_ what: String, _ code: dds_return_t, hint: String? = nil) {
        description = "\(what): \(String(cString: dds_strretcode(code)))" + (hint.map { ". " + $0 } ?? "")
    }

    init(_ description: String) { self.description = description }
}

/// A domain participant: everything of one Qeo realm member lives under it.
public final class DDSParticipant: Sendable {
    let handle: dds_entity_t
    let domain: UInt32

    /// Joins `domain` (Qeo's closed domain is 128) as `name` (the participant's entity name);
    /// `properties` go into the participant's property QoS (`dds.sec.*` turns on DDS Security).
    /// The domain gets the plugin's Cyclone defaults (``DDSDomain/defaults``) under
    /// `CYCLONEDDS_URI`.
    public init(domain: UInt32, name: String? = nil, properties: [(name: String, value: String)] = []) throws(DDSError) {
        try DDSDomain.join(domain)
        let qos = dds_create_qos()
        defer { dds_delete_qos(qos) }
        if let name { dds_qset_entity_name(qos, name) }
        for property in properties { dds_qset_prop(qos, property.name, property.value) }
        let handle = dds_create_participant(domain, qos, nil)
        guard handle > 0 else {
            DDSDomain.leave(domain)
            throw DDSError("creating a participant on domain \(domain)", handle)
        }
        self.handle = handle
        self.domain = domain
        // Batch mode for the writers created from now on (the setting is the domain's): a
        // write goes into its packet and ``DDSWriter`` sends it (see ``DDSFlusher``).
        dds_write_set_batch(true)
    }

    deinit {
        dds_delete(handle)
        DDSDomain.leave(domain)
    }
}

/// A Qeo topic on DDS: the QDM struct's type program registered under its `/` name, with Qeo's
/// QoS for its behaviour (events: reliable, volatile, keep-all; state: reliable,
/// transient-local, keep-last 1, exclusive ownership).
public final class DDSTopic: Sendable {
    let handle: dds_entity_t
    public let structure: QDMStruct
    public let samples: DDSSamples
    let participant: DDSParticipant

    public init(participant: DDSParticipant, model: QDMModel, type name: String) throws(DDSError) {
        guard let item = model.structs[name] else { throw DDSError("unknown type \(name)") }
        let program: DDSTypeProgram
        do {
            program = try DDSTypeProgram(model: model, root: name)
        } catch {
            throw DDSError("\(error)")
        }
        structure = item
        samples = DDSSamples(model: model, program: program)
        self.participant = participant
        let typeName = strdup(program.typeName)
        let meta = strdup("")
        let keyNames = program.keys.map { strdup($0.name) }
        defer {
            free(typeName)
            free(meta)
            keyNames.forEach { free($0) }
        }
        let keys = zip(program.keys, keyNames).map { key, name in
            dds_key_descriptor_t(m_name: UnsafePointer(name), m_offset: key.kofIndex, m_idx: key.order)
        }
        let layout = program.layout
        let handle = program.ops.withUnsafeBufferPointer { ops in
            keys.withUnsafeBufferPointer { keyBuffer in
                var descriptor = dds_topic_descriptor_t(
                    m_size: UInt32(layout.size), m_align: UInt32(layout.alignment), m_flagset: 0, m_nkeys: UInt32(keys.count),
                    m_typename: UnsafePointer(typeName), m_keys: keys.isEmpty ? nil : keyBuffer.baseAddress,
                    m_nops: program.instructionCount, m_ops: ops.baseAddress, m_meta: UnsafePointer(meta),
                    type_information: dds_type_meta_ser(data: nil, sz: 0), type_mapping: dds_type_meta_ser(data: nil, sz: 0),
                    restrict_data_representation: 0)
                return dds_create_topic(participant.handle, &descriptor, item.ddsTopicName, nil, nil)
            }
        }
        guard handle > 0 else { throw DDSError("creating topic \(item.ddsTopicName)", handle) }
        self.handle = handle
    }

    /// Qeo's QoS for this topic's behaviour; the caller deletes it.
    func qos() -> OpaquePointer? {
        let qos = dds_create_qos()
        dds_qset_reliability(qos, DDS_RELIABILITY_RELIABLE, 1_000_000_000)
        if structure.behavior == .state {
            dds_qset_durability(qos, DDS_DURABILITY_TRANSIENT_LOCAL)
            dds_qset_history(qos, DDS_HISTORY_KEEP_LAST, 1)
            dds_qset_ownership(qos, DDS_OWNERSHIP_EXCLUSIVE)
        } else {
            dds_qset_durability(qos, DDS_DURABILITY_VOLATILE)
            dds_qset_history(qos, DDS_HISTORY_KEEP_ALL, -1)
        }
        // A router never reads its own writes back (no Qeo ↔ MQTT echo).
        dds_qset_ignorelocal(qos, DDS_IGNORELOCAL_PARTICIPANT)
        return qos
    }

    deinit { dds_delete(handle) }
}

/// Writes JSON values (checked against the QDM struct) as samples.
public final class DDSWriter: Sendable {
    let handle: dds_entity_t
    let topic: DDSTopic
    /// Sends the batched samples; without one, each write sends its own.
    let flusher: DDSFlusher?

    /// A writer for `topic`; with `flusher`, writes are sent in batches from its thread
    /// (see ``DDSFlusher``), otherwise each write is sent before it returns.
    public init(topic: DDSTopic, flusher: DDSFlusher? = nil) throws(DDSError) {
        let qos = topic.qos()
        defer { dds_delete_qos(qos) }
        let handle = dds_create_writer(topic.participant.handle, topic.handle, qos, nil)
        guard handle > 0 else { throw DDSError("creating a writer for \(topic.structure.ddsTopicName)", handle) }
        self.handle = handle
        self.topic = topic
        self.flusher = flusher
    }

    /// Writes one sample (for state: the instance's new value).
    public func write(_ value: JSONValue) throws(DDSError) {
        try withSample(value) { dds_write(handle, $0) }
    }

    /// Disposes the instance whose key fields `value` carries (state topics).
    public func dispose(_ value: JSONValue) throws(DDSError) {
        try withSample(value) { dds_dispose(handle, $0) }
    }

    private func withSample(_ value: JSONValue, _ body: (UnsafeRawPointer) -> dds_return_t) throws(DDSError) {
        let sample = topic.samples.allocate()
        defer { topic.samples.release(sample) }
        topic.samples.write(value, into: sample)
        let status = body(UnsafeRawPointer(sample))
        guard status >= 0 else { throw DDSError("writing to \(topic.structure.ddsTopicName)", status) }
        if let flusher { flusher.noteWritten(handle) } else { dds_write_flush(handle) }
    }

    deinit {
        dds_write_flush(handle)
        dds_delete(handle)
    }
}

/// What a reader takes: a sample, or the end of an instance.
public enum DDSReceived: Sendable, Equatable {
    /// A new value (events: each event; state: the instance's new value).
    case sample(JSONValue, instance: UInt64)
    /// A new value as compact JSON bytes (keys sorted), from a reader made with `serialized`.
    case serialized([UInt8], instance: UInt64)
    /// The instance was disposed, or its last writer is gone.
    case removed(instance: UInt64)
}

/// Takes samples as they arrive (Cyclone's data-available listener) and hands them to `handler`.
public final class DDSReader: Sendable {
    let handle: dds_entity_t
    let topic: DDSTopic
    let context: ReaderContext

    final class ReaderContext: Sendable {
        let topic: DDSTopic
        let handler: @Sendable ([DDSReceived]) -> Void
        let serialized: Bool
        let reader = Atomic<Int32>(0)
        init(topic: DDSTopic, serialized: Bool, handler: @escaping @Sendable ([DDSReceived]) -> Void) {
            self.topic = topic
            self.serialized = serialized
            self.handler = handler
        }
    }

    /// A reader of `topic`; with `serialized`, samples come as JSON bytes (``DDSReceived/serialized(_:instance:)``),
    /// written straight from Cyclone's sample without a ``JSONValue`` in between.
    public init(topic: DDSTopic, serialized: Bool = false, handler: @escaping @Sendable ([DDSReceived]) -> Void) throws(DDSError) {
        let qos = topic.qos()
        defer { dds_delete_qos(qos) }
        let context = ReaderContext(topic: topic, serialized: serialized, handler: handler)
        let listener = dds_create_listener(Unmanaged.passUnretained(context).toOpaque())
        defer { dds_delete_listener(listener) }
        dds_lset_data_available(listener) { reader, argument in
            guard let argument else { return }
            let context = Unmanaged<ReaderContext>.fromOpaque(argument).takeUnretainedValue()
            context.handler(DDSReader.take(reader, topic: context.topic, serialized: context.serialized))
        }
        let handle = dds_create_reader(topic.participant.handle, topic.handle, qos, listener)
        guard handle > 0 else { throw DDSError("creating a reader for \(topic.structure.ddsTopicName)", handle) }
        self.handle = handle
        self.topic = topic
        self.context = context
        // Samples that arrived before the listener could run (transient-local state).
        handler(Self.take(handle, topic: topic, serialized: serialized))
    }

    static func take(_ reader: dds_entity_t, topic: DDSTopic, serialized: Bool) -> [DDSReceived] {
        var received: [DDSReceived] = []
        var samples = [UnsafeMutableRawPointer?](repeating: nil, count: 64)
        var infos = [dds_sample_info_t](repeating: dds_sample_info_t(), count: 64)
        while true {
            let count = samples.withUnsafeMutableBufferPointer { buffer in
                dds_take(reader, buffer.baseAddress, &infos, 64, 64)
            }
            guard count > 0 else { break }
            // The instance state on a sample is its instance's at this take, the same on each
            // of its samples: the last sample of an instance that is disposed or has no writer
            // left is its removal, even when it carries data (`dds_writedispose` sends a value
            // with the removal; a writer may leave right after writing); the samples of that
            // instance before it are its updates.
            var removals: [dds_instance_handle_t: Int] = [:]
            for index in 0..<Int(count) where infos[index].instance_state != DDS_IST_ALIVE {
                removals[infos[index].instance_handle] = index
            }
            for index in 0..<Int(count) {
                let info = infos[index]
                if removals[info.instance_handle] == index {
                    received.append(.removed(instance: info.instance_handle))
                } else if info.valid_data, let sample = samples[index] {
                    let sample = UnsafeRawPointer(sample)
                    received.append(
                        serialized
                            ? .serialized(topic.samples.serialized(sample), instance: info.instance_handle)
                            : .sample(topic.samples.read(sample), instance: info.instance_handle))
                }
            }
            _ = samples.withUnsafeMutableBufferPointer { dds_return_loan(reader, $0.baseAddress, count) }
            if count < 64 { break }
        }
        return received
    }

    deinit { dds_delete(handle) }
}
