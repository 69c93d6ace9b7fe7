/// Durations as configuration writes them: `250ms`, `1s`, `1.5s`, `2m`, `1h`, or a bare
/// number of milliseconds.
public enum DurationText {
    /// Parses a duration into nanoseconds; `nil` when the text is not a duration.
    public static func nanoseconds(_ value: JSONValue) -> UInt64? {
        switch value {
        case .int(let millis) where millis >= 0: return exactNanoseconds(Double(millis) * 1e6)
        case .double(let millis) where millis >= 0: return exactNanoseconds(millis * 1e6)
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
            guard let value = Double(number), value >= 0 else { continue }
            return exactNanoseconds(value * unit.nanos)
        }
        if let millis = Double(text), millis >= 0 { return exactNanoseconds(millis * 1e6) }
        return nil
    }

    /// `nil` for NaN, infinity and anything past what `UInt64` nanoseconds hold (584 years).
    private static func exactNanoseconds(_ nanos: Double) -> UInt64? {
        guard nanos.isFinite, nanos >= 0, nanos < 1.8e19 else { return nil }
        return UInt64(nanos)
    }
}
