import Foundation
import QeoQDM
import SwitchyardCore
import Synchronization
import Testing

@testable import IntegrationSupport
@testable import QeoDDS

/// Type programs against what `idlc -t` generates for the same types, and samples exchanged
/// with a Python `cyclonedds` peer.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct DDSTests {
    static let qdm = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("QeoQDMTests/QDM")
    static let model: QDMModel = {
        let files = ["QSimpleChat_ChatMessage.xml", "QSimpleChat_ChatParticipant.xml", "QGauge_NetStatMessage.xml"]
        return (try? QDMParser.load(files.map { qdm.appendingPathComponent($0).path })) ?? QDMModel()
    }()

    @Test func aDomainThatCannotBeSetUpNamesItsPortsWhereTheyExist() {
        // Qeo's domain 128: Cyclone's fixed ports are 7400 + 250 × 128 and the one after.
        #expect(DDSDomain.setupFailureHint(128).contains("UDP ports (39400 and 39401 unless CYCLONEDDS_URI moves them)"))
        // Domain 240 would need ports above 65535: the error names none.
        #expect(!DDSDomain.setupFailureHint(240).contains("unless CYCLONEDDS_URI"))
        #expect(DDSDomain.setupFailureHint(240).contains("another program holds one of the domain's UDP ports;"))
    }

    /// idlc 0.10.2 `-t` for NetStatMessage: a keyed nested struct and a string key.
    @Test func theNetStatProgramIsIdlcs() throws {
        let program = try DDSTypeProgram(model: Self.model, root: "org.qeo.sample.gauge.NetStatMessage")
        let adr: UInt32 = 0x0100_0000
        let int64Signed: UInt32 = 0x0004_0000 | 4
        var expected: [UInt32] = [adr | 0x000d_0000 | 9, 0, 3 << 16 | 16, adr | 0x0005_0000 | 9, 16]
        for offset in stride(from: 24, through: 56, by: 8) { expected += [adr | int64Signed, UInt32(offset)] }
        expected += [0, adr | int64Signed | 1, 0, adr | int64Signed | 1, 8, 0]
        expected += [0x0700_0002, 0, 0, 0x0700_0002, 0, 2, 0x0700_0001, 3]
        #expect(program.ops == expected)
        #expect(program.instructionCount == 11)
        #expect(program.keys.map(\.name) == ["deviceId.upper", "deviceId.lower", "ifName"])
        #expect(program.keys.map(\.kofIndex) == [21, 24, 27])
        #expect(program.layout == DDSLayout(size: 64, alignment: 8, offsets: [0, 16, 24, 32, 40, 48, 56]))
    }

    /// idlc for ChatParticipant: an enum with its size flag and largest value, one string key.
    @Test func theChatParticipantProgramIsIdlcs() throws {
        let program = try DDSTypeProgram(model: Self.model, root: "org.qeo.sample.simplechat.ChatParticipant")
        #expect(program.ops == [0x0105_0009, 0, 0x010c_0080, 8, 3, 0, 0x0700_0001, 0])
        #expect(program.typeName == "org::qeo::sample::simplechat::ChatParticipant")
        #expect(program.layout.size == 16)
    }

    @Test func samplesRoundTripThroughMemory() throws {
        let program = try DDSTypeProgram(model: Self.model, root: "org.qeo.sample.gauge.NetStatMessage")
        let samples = DDSSamples(model: Self.model, program: program)
        let value: JSONValue = [
            "deviceId": ["upper": 1, "lower": -2], "ifName": "eth0", "bytesIn": 10, "packetsIn": 1, "bytesOut": 1_099_511_627_776,
            "packetsOut": 2, "timestamp": 1_700_000_000_000,
        ]
        let sample = samples.allocate()
        defer { samples.release(sample) }
        samples.write(value, into: sample)
        #expect(samples.read(UnsafeRawPointer(sample)) == value)
        // Serialized straight from memory: the same bytes as the value's own serialization.
        #expect(samples.serialized(UnsafeRawPointer(sample)) == value.serializedBytes())
    }

    /// Direct serialization of a struct with an enum, a sequence and text that needs escaping.
    @Test func samplesSerializeLikeTheirJSONValue() throws {
        let program = try DDSTypeProgram(model: Self.model, root: "org.qeo.sample.simplechat.ChatParticipant")
        let samples = DDSSamples(model: Self.model, program: program)
        let value: JSONValue = ["name": "a \"quoted\" name\n\u{1}é", "state": "BUSY"]
        let sample = samples.allocate()
        defer { samples.release(sample) }
        samples.write(value, into: sample)
        let bytes = samples.serialized(UnsafeRawPointer(sample))
        #expect(bytes == value.serializedBytes())
        #expect(try JSONValue(parsing: bytes) == value)
    }

    /// A domain of these tests' own, so other DDS tests running at the same time are not heard.
    static let domain: UInt32 = 131
    /// DDS on loopback only, its ports below the ephemeral range.
    static let loopback = CycloneLoopback.configuration

    static func peer(_ arguments: [String]) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["python3", URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("qeo_peer.py").path]
            + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["CYCLONEDDS_URI"] = loopback
        environment["QEO_DOMAIN"] = String(domain)
        process.environment = environment
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        return (process, output, input)
    }

    @Test func aChatMessageReachesAPythonPeerAndOneComesBack() throws {
        setenv("CYCLONEDDS_URI", Self.loopback, 1)
        let participant = try DDSParticipant(domain: Self.domain)
        let topic = try DDSTopic(participant: participant, model: Self.model, type: "org.qeo.sample.simplechat.ChatMessage")
        let writer = try DDSWriter(topic: topic)
        let received = Mutex<[DDSReceived]>([])
        let reader = try DDSReader(topic: topic) { samples in received.withLock { $0 += samples } }
        _ = reader

        // Out: written every 100 ms until the Python reader has printed one.
        let (subscriber, subscriberOutput, subscriberInput) = try Self.peer(["sub-chat", "20"])
        defer {
            try? subscriberInput.fileHandleForWriting.close()
            subscriber.waitUntilExit()
        }
        let lines = LineCollector(subscriberOutput)
        let deadline = ContinuousClock.now + .seconds(20)
        while !lines.text.contains("\"message\""), ContinuousClock.now < deadline {
            try writer.write(["from": "router", "message": "hello python"])
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(lines.text.contains(#"{"from": "router", "message": "hello python"}"#), "\(lines.text)")

        // In: the Python writer's messages arrive as JSON; none of the router's own come back.
        let (publisher, _, publisherInput) = try Self.peer(["pub-chat", "python", "hello router"])
        defer {
            try? publisherInput.fileHandleForWriting.close()
            publisher.waitUntilExit()
        }
        let inbound = ContinuousClock.now + .seconds(20)
        while received.withLock({ $0.isEmpty }), ContinuousClock.now < inbound { Thread.sleep(forTimeInterval: 0.05) }
        let first = received.withLock { $0.first }
        guard case .sample(let value, _)? = first else {
            Issue.record("nothing received from the Python peer")
            return
        }
        #expect(value == ["from": "python", "message": "hello router"])
        #expect(received.withLock { $0 }.allSatisfy { if case .sample(let value, _) = $0 { value["from"] == "python" } else { false } })
    }

    /// A state instance removed by a Cyclone peer (Python `cyclonedds`, its own Cyclone) is
    /// reported as a removal however it goes: disposed, disposed with a value in the same sample
    /// (`write_dispose`, which used to come out as an update with that value), unregistered,
    /// or its writer leaving. Nothing after the first value is reported as a value.
    @Test(arguments: ["remove", "writedispose AWAY", "unregister", "leave"])
    func aStateInstanceThatGoesIsReportedAsRemoved(how: String) throws {
        setenv("CYCLONEDDS_URI", Self.loopback, 1)
        let participant = try DDSParticipant(domain: Self.domain)
        let topic = try DDSTopic(participant: participant, model: Self.model, type: "org.qeo.sample.simplechat.ChatParticipant")
        let received = ReceivedCollector()
        let reader = try DDSReader(topic: topic) { samples in received.add(samples) }
        _ = reader
        let name = "peer-\(how.split(separator: " ")[0])"
        let (peer, output, input) = try Self.peer(["participant", name, "AVAILABLE"])
        defer {
            try? input.fileHandleForWriting.close()
            peer.waitUntilExit()
        }
        let lines = LineCollector(output)
        #expect(lines.wait(timeout: 20) { $0.contains("ready") })
        let first = received.wait(timeout: 20) {
            $0.contains { if case .sample(let value, _) = $0 { value["name"]?.stringValue == name } else { false } }
        }
        guard case .sample(let value, let instance)? = first.first else {
            Issue.record("the peer's state never arrived: \(first)")
            return
        }
        #expect(value == ["name": .string(name), "state": "AVAILABLE"])
        if how == "leave" {
            try input.fileHandleForWriting.close()
        } else {
            try input.fileHandleForWriting.write(contentsOf: Data((how + "\n").utf8))
        }
        let all = received.wait(timeout: 20) { $0.contains(.removed(instance: instance)) }
        #expect(all.contains(.removed(instance: instance)), "\(how): \(all)")
        #expect(all.filter { if case .sample = $0 { true } else { false } }.count == 1, "\(how) reported a value: \(all)")
    }

    /// The threads of this process named `name` (Linux: /proc/self/task/*/comm).
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    /// Waits until `count` threads are named `name`, at most 5 s, and returns how many are: a
    /// Cyclone thread names itself once it runs, and no event tells when (so this polls /proc).
    static func threads(named name: String, becoming count: Int) -> Int {
        let deadline = ContinuousClock.now + .seconds(5)
        var seen = threads(named: name)
        while seen != count, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.01)
            seen = threads(named: name)
        }
        return seen
    }

    /// The plugin's Cyclone defaults: one receive thread per domain, unless `CYCLONEDDS_URI`
    /// says otherwise (it is read after them); the last participant's release deletes the domain
    /// and its threads.
    @Test func aDomainHasOneReceiveThreadUnlessTheUserAsksForMore() throws {
        setenv("CYCLONEDDS_URI", Self.loopback, 1)
        defer { setenv("CYCLONEDDS_URI", Self.loopback, 1) }
        let before = Self.threads(named: "recv")
        var participant: DDSParticipant? = try DDSParticipant(domain: 137)
        #expect(Self.threads(named: "recv", becoming: before + 1) == before + 1)
        #expect(Self.threads(named: "recvUC") == 0)
        participant = nil
        #expect(Self.threads(named: "recv", becoming: before) == before, "the domain goes with its last participant")

        let many = Self.loopback.replacingOccurrences(
            of: "</Domain>", with: "<Internal><MultipleReceiveThreads>true</MultipleReceiveThreads></Internal></Domain>")
        setenv("CYCLONEDDS_URI", many, 1)
        participant = try DDSParticipant(domain: 137)
        #expect(Self.threads(named: "recvUC", becoming: 1) == 1, "CYCLONEDDS_URI overrides the plugin's defaults")
        withExtendedLifetime(participant) {}
    }

    /// Batched writes: a burst and the lone sample after it all reach a Python reader (the
    /// flusher sends what the last write left in its packet), the flusher's thread starts with
    /// the first write and ends with the flusher.
    @Test func aBatchingWriterSendsABurstAndTheSampleAfterIt() throws {
        setenv("CYCLONEDDS_URI", Self.loopback, 1)
        let participant = try DDSParticipant(domain: Self.domain)
        let topic = try DDSTopic(participant: participant, model: Self.model, type: "org.qeo.sample.simplechat.ChatMessage")
        let before = Self.threads(named: "qeo-flush")
        var flusher: DDSFlusher? = DDSFlusher()
        var writer: DDSWriter? = try DDSWriter(topic: topic, flusher: flusher)
        #expect(Self.threads(named: "qeo-flush") == before, "the thread starts with the first write, not before")

        let (subscriber, subscriberOutput, subscriberInput) = try Self.peer(["sub-chat", "30"])
        defer {
            try? subscriberInput.fileHandleForWriting.close()
            subscriber.waitUntilExit()
        }
        let lines = LineCollector(subscriberOutput)
        // Discovery: a probe every 100 ms until the reader has one.
        var discovered = false
        for _ in 0..<200 where !discovered {
            try writer?.write(["from": "router", "message": "probe"])
            discovered = lines.wait(timeout: 0.1) { $0.contains("probe") }
        }
        #expect(discovered, "\(lines.text)")
        #expect(Self.threads(named: "qeo-flush") == before + 1)

        for index in 0..<300 { try writer?.write(["from": "router", "message": .string("burst \(index)")]) }
        try writer?.write(["from": "router", "message": "last"])
        #expect(lines.wait(timeout: 20) { $0.contains(#""message": "last""#) }, "\(lines.text.suffix(300))")
        let burst = lines.text.split(separator: "\n").filter { $0.contains("burst ") }
        #expect(Set(burst).count == 300)

        writer = nil
        flusher = nil
        #expect(Self.threads(named: "qeo-flush") == before, "releasing the flusher ends its thread")
    }
}

/// Standard output of a child, collected as it comes. `@unchecked Sendable`: `lock` guards `data`
/// and is the condition that signals each chunk.
final class LineCollector: @unchecked Sendable {
    private let lock = NSCondition()
    private var data = Data()
    private var reader: PipeReader?

    init(_ pipe: Pipe) {
        reader = PipeReader(pipe) { [weak self] chunk in
            guard let self else { return }
            self.lock.withLock {
                self.data.append(chunk)
                self.lock.broadcast()
            }
        }
    }

    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }

    /// Waits (on each chunk, not polling) until the output so far satisfies `done`, at most
    /// `timeout`; true when it did.
    func wait(timeout: TimeInterval, until done: (String) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return lock.withLock {
            while !done(String(decoding: data, as: UTF8.self)) {
                guard lock.wait(until: deadline) else { return done(String(decoding: data, as: UTF8.self)) }
            }
            return true
        }
    }

    deinit { reader?.stop() }
}

/// What a reader handed over, waited on without polling.
final class ReceivedCollector: Sendable {
    private let received = Mutex<[DDSReceived]>([])
    private let arrived = NSCondition()

    func add(_ samples: [DDSReceived]) {
        received.withLock { $0 += samples }
        arrived.withLock { arrived.broadcast() }
    }

    /// Waits until what arrived satisfies `done`, at most `timeout` seconds; returns what arrived.
    func wait(timeout: TimeInterval, until done: ([DDSReceived]) -> Bool) -> [DDSReceived] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return arrived.withLock {
            while !done(received.withLock { $0 }) {
                guard arrived.wait(until: deadline) else { break }
            }
            return received.withLock { $0 }
        }
    }
}
