/// A deterministic pseudo-random generator (SplitMix64) so fuzz runs repeat exactly.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// Byte-level mutations for codec fuzz tests.
public enum Mutation {
    /// Applies one random edit: flip a bit, replace, insert or delete a byte, truncate, or repeat a run.
    public static func apply(to bytes: inout [UInt8], using generator: inout SeededGenerator) {
        guard !bytes.isEmpty else {
            bytes.append(UInt8.random(in: 0...255, using: &generator))
            return
        }
        let index = Int.random(in: 0..<bytes.count, using: &generator)
        switch Int.random(in: 0..<6, using: &generator) {
        case 0: bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
        case 1: bytes[index] = UInt8.random(in: 0...255, using: &generator)
        case 2: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: index)
        case 3: bytes.remove(at: index)
        case 4: bytes.removeLast(bytes.count - index)
        default:
            let end = min(bytes.count, index + Int.random(in: 1...8, using: &generator))
            bytes.insert(contentsOf: bytes[index..<end], at: index)
        }
    }
}
