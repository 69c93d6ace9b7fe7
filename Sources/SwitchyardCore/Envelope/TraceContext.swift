/// W3C Trace Context (https://www.w3.org/TR/trace-context/) as envelope headers: how a trace
/// crosses the router. Plugins map the two headers to and from their protocol (MQTT 5 user
/// properties, HTTP headers, SIP headers) under the same names; the router, when tracing is on,
/// continues the trace and rewrites `traceparent` on what it delivers.
public enum TraceContext {
    /// The header naming the trace and the parent span: `00-<32 hex>-<16 hex>-<2 hex>`.
    public static let parentHeader = "traceparent"
    /// The header of vendor-specific trace state, passed on as it came.
    public static let stateHeader = "tracestate"
    /// The longest `tracestate` passed on: the specification's 32 members of at most 256
    /// characters fit in far less in practice; 512 is what it asks a propagator to keep.
    public static let maximumStateLength = 512
    /// The longest `traceparent` looked at: version 00 is 55 characters; a later version may
    /// append fields, which are ignored.
    public static let maximumParentLength = 256

    /// Whether `value` is a `traceparent` a tracer may trust: lowercase hex fields of the right
    /// lengths, a version other than `ff` (version 00 exactly 55 characters), and trace and
    /// parent ids that are not all zeros. Reads at most ``maximumParentLength`` bytes and
    /// allocates nothing.
    public static func isValidParent(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            guard bytes.count >= 55, bytes.count <= maximumParentLength else { return false }
            guard bytes[2] == dash, bytes[35] == dash, bytes[52] == dash else { return false }
            guard isHex(bytes, 0..<2), isHex(bytes, 3..<35), isHex(bytes, 36..<52), isHex(bytes, 53..<55) else { return false }
            let version00 = bytes[0] == zero && bytes[1] == zero
            if version00 {
                guard bytes.count == 55 else { return false }
            } else {
                // Version ff is invalid; a later version's extra fields follow a dash.
                guard !(bytes[0] == letterF && bytes[1] == letterF) else { return false }
                guard bytes.count == 55 || bytes[55] == dash else { return false }
            }
            return !allZero(bytes, 3..<35) && !allZero(bytes, 36..<52)
        }
    }

    /// Whether `value` is a `tracestate` short enough to pass on and made of the characters the
    /// specification allows (printable ASCII; no control characters a peer could inject).
    public static func isValidState(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            guard bytes.count <= maximumStateLength else { return false }
            return bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
        }
    }

    private static let dash = UInt8(ascii: "-")
    private static let zero = UInt8(ascii: "0")
    private static let letterF = UInt8(ascii: "f")

    private static func isHex(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        range.allSatisfy { index in
            let byte = bytes[index]
            return (byte >= zero && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= letterF)
        }
    }

    private static func allZero(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        range.allSatisfy { bytes[$0] == zero }
    }
}
