import FuzzingSupport
import MQTTCodec
import NIOCore
import Testing

/// Random and mutated input from a fixed-seed generator: decoding must never crash, never consume
/// bytes when it throws, and whatever it accepts must encode back to the same packet.
@Suite struct MQTTCodecFuzzTests {
    private struct Outcome {
        var packets = 0
        var errors = 0
        var incomplete = 0
    }

    /// Decodes everything in `bytes`, re-encoding each packet it accepts.
    private func exercise(_ bytes: [UInt8], _ version: MQTTVersion, into outcome: inout Outcome) throws {
        var buffer = ByteBuffer(bytes: bytes)
        while true {
            let before = buffer.readableBytes
            let decoded: MQTTPacket?
            do throws(MQTTCodecError) {
                decoded = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: 4096)
            } catch {
                #expect(buffer.readableBytes == before, "\(error) consumed bytes")
                #expect(!error.packet.isEmpty && !error.reason.isEmpty)
                outcome.errors += 1
                return
            }
            guard let packet = decoded else {
                #expect(buffer.readableBytes == before)
                outcome.incomplete += 1
                return
            }
            #expect(buffer.readableBytes < before)
            outcome.packets += 1
            let again = try encoded(packet, version)
            #expect(try decodedWhole(again, version) == packet, "\(bytes)")
        }
    }

    @Test func randomBytes() throws {
        var generator = SeededGenerator(seed: 0x5EED_0001)
        var outcome = Outcome()
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...40, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Give half of them a plausible fixed header so more get past the first byte.
            if !bytes.isEmpty, Bool.random(using: &generator) {
                let type = UInt8.random(in: 1...15, using: &generator)
                bytes[0] = type << 4 | (type == 6 || type == 8 || type == 10 ? 0b0010 : 0)
                if bytes.count > 1 { bytes[1] = UInt8(bytes.count - 2) }
            }
            try exercise(bytes, Bool.random(using: &generator) ? .v5 : .v3_1_1, into: &outcome)
        }
        #expect(outcome.errors > 0)
        #expect(outcome.packets > 0)
    }

    @Test func mutatedValidPackets() throws {
        var generator = SeededGenerator(seed: 0x5EED_0002)
        var seeds: [(MQTTVersion, [UInt8])] = []
        for version in [MQTTVersion.v3_1_1, .v5] {
            for packet in samplePackets(version) { seeds.append((version, try encoded(packet, version))) }
        }
        var outcome = Outcome()
        for _ in 0..<20_000 {
            let (version, original) = seeds[Int.random(in: 0..<seeds.count, using: &generator)]
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                Mutation.apply(to: &bytes, using: &generator)
            }
            try exercise(bytes, version, into: &outcome)
        }
        #expect(outcome.errors > 0)
        #expect(outcome.packets > 0)
        #expect(outcome.incomplete > 0)
    }
}
