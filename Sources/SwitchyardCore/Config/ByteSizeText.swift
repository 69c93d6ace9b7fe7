/// Sizes as configuration writes them: `4096`, `64KB`, `64KiB`, `512MB`, `1GiB` (KB = 1000
/// bytes, KiB = 1024).
public enum ByteSizeText {
    /// Parses a size into bytes; `nil` when the text is not a size.
    public static func bytes(_ value: JSONValue) -> Int? {
        switch value {
        case .int(let count) where count >= 0: return count
        case .string(let text): return bytes(text)
        default: return nil
        }
    }

    /// Parses `4096`, `64KB`, `64KiB`, `512MB`, `1GiB`, `2TB`.
    public static func bytes(_ text: String) -> Int? {
        let units: [(suffix: String, factor: Double)] = [
            ("KiB", 1024), ("MiB", 1024 * 1024), ("GiB", 1024 * 1024 * 1024), ("TiB", 1024 * 1024 * 1024 * 1024),
            ("KB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12), ("B", 1),
        ]
        let trimmed = text.trimmingSpaces
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            guard let number = Double(trimmed.dropLast(unit.suffix.count).trimmingSpaces), number >= 0 else { return nil }
            let total = number * unit.factor
            guard total.isFinite, total < 9e18 else { return nil }
            return Int(total)
        }
        guard let count = Int(trimmed), count >= 0 else { return nil }
        return count
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
