import QeoDDS
import QeoEnrollment
import QeoQDM
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The exported entry point of `libqeo.so`.
@_cdecl("switchyard_plugin_entry")
public func switchyardPluginEntry(_ offer: UnsafeRawPointer?, _ table: UnsafeMutableRawPointer?, _ capacity: Int) -> UInt32 {
    PluginExport.negotiate(QeoPlugin.self, offer: offer, table: table, capacity: capacity)
}

/// A member of a Qeo realm on Cyclone DDS: QDM types as DDS topics, events and state read into
/// envelopes and envelopes written as samples. One instance is one DDS participant.
final class QeoPlugin: SwitchyardPlugin {
    static let eventsPort = "events"
    static let changesPort = "changes"
    static let statesPort = "states"
    static let writePort = "write"
    static let removedType = "qeo.Removed"
    static let statesType = "qeo.States"
    static let removeType = "qeo.Remove"
    static let wakesPort = "wakes"
    static let wakeType = "qeo.Wake"

    /// Decoded by `validate` before anything starts (see ``SwitchyardPlugin/configuration``).
    static let configuration: (any PluginConfiguration.Type)? = QeoSettings.self

    static let manifest = PluginManifest(
        name: "qeo",
        version: "0.1.0",
        summary: "Qeo realm bus: QDM types as Cyclone DDS topics (events and state)",
        ports: [
            PortDeclaration(
                name: eventsPort, direction: .source, types: ["*"], requires: "read",
                summary: "Each sample of the event topics read (type: qeo. and the QDM type)"),
            PortDeclaration(
                name: changesPort, direction: .source, types: ["*", removedType], requires: "read",
                summary: "State change reader: each new or updated instance, and qeo.Removed when one is disposed or its writer gone"),
            PortDeclaration(
                name: statesPort, direction: .source, types: [statesType], requires: "read",
                summary: "State reader: the full current set of a state topic's instances on every change"),
            PortDeclaration(
                name: wakesPort, direction: .source, types: [wakeType], requires: "wake",
                summary: "qeo.Wake {user, cursor, topic, removed} for each user a watched state change concerns (route it to push)"),
            PortDeclaration(
                name: writePort, direction: .sink, types: ["*"], requires: "write",
                summary: "Writes the envelope's body as a sample of its type; a qeo.Remove {type, key} disposes that instance"),
        ],
        types: [
            removedType: [
                "type": "object", "required": ["type", "key"],
                "properties": ["type": ["type": "string"], "key": ["type": "object"]],
            ],
            removeType: [
                "type": "object", "required": ["type", "key"], "additionalProperties": false,
                "properties": ["type": ["type": "string"], "key": ["type": "object"]],
            ],
            wakeType: [
                "type": "object", "required": ["user", "cursor", "topic", "removed"], "additionalProperties": false,
                "properties": [
                    "user": ["type": "string"], "cursor": ["type": "integer"], "topic": ["type": "string"], "removed": ["type": "boolean"],
                ],
            ],
            statesType: [
                "type": "object", "required": ["type", "instances"],
                "properties": ["type": ["type": "string"], "instances": ["type": "array"]],
            ],
        ],
        config: QeoSettings.jsonSchema,
        commands: commands
    )

    let context: PluginContext
    let configuration: QeoConfiguration
    private let state = Mutex(State())
    /// Where a sample waits while its route is full.
    private let room = SourceRoom()
    /// The realm's enrollment endpoint, when `enroll:` is set.
    let enrollment: EnrollmentServer?
    /// Who a watched state change wakes, and their feeds, when `wake:` is set.
    let wakes: QeoWakes?
    /// The realm policy's say on the instance's iiidea pieces.
    let pieces: QeoPieces

    private struct State {
        var participant: DDSParticipant?
        var readers: [DDSReader] = []
        var writers: [String: DDSWriter] = [:]
        /// The current instances of each state topic read, by instance handle.
        var instances: [String: [UInt64: JSONValue]] = [:]
        var stopped = false
        /// The pending attempt to join the domain, while it is unavailable.
        var retry: Task<Void, Never>?
    }

    init(context: PluginContext, name: String, config: JSONValue) throws {
        self.context = context
        configuration = try QeoConfiguration(config: config)
        pieces = QeoPieces(configuration: configuration, context: context)
        wakes = try QeoWakes(configuration: configuration, context: context)
        enrollment = configuration.enroll.map { [wakes] settings in
            EnrollmentServer(settings: settings, instance: name, context: context, memberRoutes: wakes.map { [$0.feedRoute] } ?? [])
        }
    }

    func start() throws {
        try startEnrollment()
        do {
            try join()
        } catch let unavailable as DomainUnavailable {
            // No usable network interface, or the domain cannot be created now: not a
            // configuration error, so the instance starts not ready and keeps trying.
            context.metric(.gauge, "ready", 0)
            context.metric(.counter, "join_failures_total", 1)
            context.log(.warning, "qeo: \(unavailable.reason); not ready, retrying in \(Self.firstRetry)")
            scheduleRetry(after: Self.firstRetry)
        }
    }

    /// The first and the longest pause between attempts to join the domain.
    static let firstRetry = Duration.seconds(1)
    static let longestRetry = Duration.seconds(30)

    /// The participant could not be created; worth trying again later.
    private struct DomainUnavailable: Error {
        var reason: String
    }

    /// Creates the participant, the topics, the writers and the readers. Throws
    /// ``DomainUnavailable`` when the participant cannot be created, `PluginError` for
    /// everything else (a policy that refuses a writer is configuration, not an outage).
    private func join() throws {
        let participant: DDSParticipant
        do {
            participant = try DDSParticipant(
                domain: configuration.domain, name: configuration.participantName, properties: configuration.securityProperties)
        } catch {
            throw DomainUnavailable(reason: "\(error)")
        }
        do {
            var topics: [String: DDSTopic] = [:]
            func topic(_ item: QDMStruct) throws(DDSError) -> DDSTopic {
                if let existing = topics[item.name] { return existing }
                let created = try DDSTopic(participant: participant, model: configuration.model, type: item.name)
                topics[item.name] = created
                return created
            }
            var writers: [String: DDSWriter] = [:]
            // One flusher for the instance's writers: its thread starts with the first write.
            let flusher = DDSFlusher()
            for item in configuration.write { writers[item.name] = try DDSWriter(topic: try topic(item), flusher: flusher) }
            // A retry that finishes while the instance stops keeps nothing.
            guard !state.withLock({ $0.stopped }) else { return }
            state.withLock { $0.participant = participant }
            state.withLock { $0.writers = writers }
            for item in configuration.read {
                // Events go out as the sample's JSON, written straight from Cyclone's memory.
                let reader = try DDSReader(topic: try topic(item), serialized: item.behavior == .event) { [weak self] received in
                    self?.received(received, of: item)
                }
                state.withLock { $0.readers.append(reader) }
            }
        } catch {
            throw PluginError("qeo: \(error)")
        }
        context.log(
            .info,
            "joined domain \(configuration.domain) as \(configuration.participantName); reading \(configuration.read.count), writing \(configuration.write.count) topics"
        )
        context.metric(.gauge, "ready", 1)
    }

    /// Tries to join again after `pause` (doubling to ``longestRetry``, with ±20 % jitter)
    /// until it succeeds, fails for a reason that is not an outage, or the instance stops.
    private func scheduleRetry(after pause: Duration) {
        let jitter = Double.random(in: 0.8...1.2)
        let retry = Task { [weak self] in
            try? await Task.sleep(for: pause * jitter)
            guard let self, !Task.isCancelled, !self.state.withLock({ $0.stopped }) else { return }
            do {
                try self.join()
            } catch let unavailable as DomainUnavailable {
                self.context.metric(.counter, "join_failures_total", 1)
                let next = min(pause * 2, Self.longestRetry)
                self.context.log(.warning, "qeo: \(unavailable.reason); still not ready, retrying in \(next)")
                self.scheduleRetry(after: next)
            } catch {
                self.context.log(.error, "\(error); the instance stays not ready until the configuration is fixed")
            }
        }
        state.withLock { $0.retry = retry }
    }

    func stop() {
        let (readers, writers, participant) = state.withLock { state in
            state.stopped = true
            state.retry?.cancel()
            state.retry = nil
            defer {
                state.readers = []
                state.writers = [:]
                state.participant = nil
            }
            return (state.readers, state.writers, state.participant)
        }
        // A listener waiting for room would hold up its reader's deletion.
        room.stop()
        // Readers first: their listeners must not run once the router has stopped the instance.
        withExtendedLifetime((readers, writers, participant)) {}
        stopEnrollment()
    }

    // MARK: Pieces

    /// Refuses a trigger or action piece whose topics the realm's policy does not let the
    /// instance's member read or write.
    func enablePiece(port: String, iiidea: String, preferences: JSONValue) throws {
        try pieces.enable(port: port, iiidea: iiidea)
    }

    // MARK: Reading

    private func received(_ batch: [DDSReceived], of item: QDMStruct) {
        guard !state.withLock({ $0.stopped }) else { return }
        // One counter update per batch (a wake-up of Cyclone's listener), not per sample.
        var emitted = 0
        defer { if emitted > 0 { context.metric(.counter, "samples_received_total", Double(emitted)) } }
        for entry in batch {
            switch (item.behavior, entry) {
            case (.event?, .serialized(let body, _)):
                if emit(envelope(item, body: body), on: Self.eventsPort) { emitted += 1 }
            case (.event?, .sample(let value, _)):
                if emit(envelope(item, body: value.serializedBytes()), on: Self.eventsPort) { emitted += 1 }
            case (.state?, .sample(let value, let instance)):
                state.withLock { $0.instances[item.name, default: [:]][instance] = value }
                wakes?.changed(item, key: value, value: value)
                if emit(envelope(item, body: value.serializedBytes(), instance: instance), on: Self.changesPort) { emitted += 1 }
            case (.state?, .removed(let instance)):
                guard let last = state.withLock({ $0.instances[item.name]?.removeValue(forKey: instance) }) else { continue }
                var key: [String: JSONValue] = [:]
                for member in item.keys { key[member.name] = last[member.name] }
                wakes?.changed(item, key: last, value: nil)
                let body: JSONValue = ["type": .string(item.name), "key": .object(key)]
                var removed = Envelope(
                    type: Self.removedType, subject: item.name, contentType: "application/json", body: body.serializedBytes())
                removed.headers.append(name: "qeo.type", value: item.name)
                removed.headers.append(name: "qeo.instance", value: String(instance))
                if emit(removed, on: Self.changesPort) { emitted += 1 }
            default:
                continue
            }
        }
        guard item.behavior == .state, !batch.isEmpty else { return }
        let all = state.withLock { state in (state.instances[item.name] ?? [:]).sorted { $0.key < $1.key }.map(\.value) }
        let body: JSONValue = ["type": .string(item.name), "instances": .array(all)]
        var states = Envelope(type: Self.statesType, subject: item.name, contentType: "application/json", body: body.serializedBytes())
        states.headers.append(name: "qeo.type", value: item.name)
        if emit(states, on: Self.statesPort) { emitted += 1 }
    }

    private func envelope(_ item: QDMStruct, body: [UInt8], instance: UInt64? = nil) -> Envelope {
        var envelope = Envelope(
            type: QeoTopics.envelopeType(of: item.name), subject: item.name, contentType: "application/json", body: body)
        envelope.headers.append(name: "qeo.type", value: item.name)
        if let instance { envelope.headers.append(name: "qeo.instance", value: String(instance)) }
        return envelope
    }

    /// A full route may hold Cyclone's delivery thread this long (and so, through
    /// reliability, the writers) before the sample is dropped and counted.
    static let longestWaitForRoom = Duration.seconds(2)

    /// Emits, waiting for the router's resume while the route is full (see
    /// ``longestWaitForRoom``). True when the router took it (the caller counts
    /// `samples_received_total`).
    private func emit(_ envelope: Envelope, on port: String) -> Bool {
        switch room.emit(envelope, on: port, through: context, until: .now + Self.longestWaitForRoom) {
        case .ok:
            return true
        case .full:
            context.metric(.counter, "samples_dropped_total", 1)
            context.log(.warning, "dropped a \(envelope.type) sample: the route stayed full for 2 s")
            return false
        default:
            return false
        }
    }

    func resume(port: String) { room.resumed() }

    // MARK: Writing

    func deliver(_ envelope: Envelope, on port: String, delivery: Delivery) {
        // Not `cond ? body : nil`: JSONValue takes nil literals, so that nil would be JSON null.
        var removal: JSONValue?
        if envelope.type == Self.removeType { removal = envelope.decodedBody() }
        // The QDM name: envelope types are `qeo.` + it, and a qeo.Remove body may name either.
        let typeName = QeoTopics.qdmName(
            of: removal.flatMap { $0["type"]?.stringValue } ?? envelope.headers["qeo.type"] ?? envelope.type, in: configuration.model)
        guard let writer = state.withLock({ $0.writers[typeName] }) else {
            let known = configuration.write.map(\.name).joined(separator: ", ")
            return delivery.ack(.reject, reason: "\(typeName) is not a topic this instance writes (write: \(known))")
        }
        do {
            if envelope.type == Self.removeType || envelope.headers["qeo.action"] == "remove" {
                // Removal by key: the key members are enough (the others are written as zero).
                let body = removal.flatMap { $0["key"] } ?? envelope.decodedBody()
                let item = configuration.model.structs[typeName]
                if let missing = item?.keys.first(where: { body[$0.name] == nil }) {
                    throw QDMError("removing needs the key member \(missing.name)", at: nil)
                }
                try writer.dispose(body)
            } else {
                let value = try configuration.model.conform(envelope.decodedBody(), to: typeName)
                try writer.write(value)
            }
            context.metric(.counter, "samples_written_total", 1)
            delivery.ack(.ok)
        } catch let error as QDMError {
            context.metric(.counter, "samples_invalid_total", 1)
            delivery.ack(.reject, reason: "\(typeName): \(error)")
        } catch {
            delivery.ack(.retry, reason: "\(error)")
        }
    }
}
