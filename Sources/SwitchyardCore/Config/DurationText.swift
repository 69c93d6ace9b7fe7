/// Durations as configuration writes them: `250ms`, `1s`, `1.5s`, `2m`, `1h`, or a bare
/// number of milliseconds.
public enum DurationText {
    /// Parses a duration into nanoseconds; `nil` when the text is not a duration.
    public static func nanoseconds(_ value: JSONValue) -> UInt64? {
        switch value {
        case .int(let millis) where millis >= 0: return UInt64(millis) * 1_000_000
        case .double(let millis) where millis >= 0: return UInt64(millis * 1_000_000)
        case .string(let text): return nanoseconds(text)
        default: return nil
        }
    }

    /// Parses `250ms`, `1s`, `1.5s`, `2m`, `1h`, `10us`, `5ns`.
    public static func nanoseconds(_ text: String) -> UInt64? {
        let units: [(suffix: String, nanos: Double)] = [
            ("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9),
        ]
        for unit in units where text.hasSuffix(unit.suffix) {
            let number = text.dropLast(unit.suffix.count)
            // "ms" also ends in "s": only accept when what is left is a number.
            guard let value = Double(number), value >= 0, value.isFinite else { continue }
            return UInt64(value * unit.nanos)
        }
        if let millis = Double(text), millis >= 0 { return UInt64(millis * 1e6) }
        return nil
    }
}
