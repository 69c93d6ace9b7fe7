/// W3C Trace Context (https://www.w3.org/TR/trace-context/) as envelope headers: how a trace
/// crosses the router. Plugins map the two headers to and from their protocol (MQTT 5 user
/// properties, HTTP headers, SIP headers) under the same names; the router, when tracing is on,
/// continues the trace and rewrites `traceparent` on what it delivers.
public enum TraceContext {
    /// The header naming the trace and the parent span: `00-<32 hex>-<16 hex>-<2 hex>`.
    public static let parentHeader = "traceparent"
    /// The header of vendor-specific trace state, passed on as it came.
    public static let stateHeader = "tracestate"
    /// The longest `tracestate` passed on: what the specification asks a propagator to keep.
    public static let maximumStateLength = 512
    /// The length of a version 00 `traceparent`, the only version the router continues (a
    /// later version starts a new trace, as a malformed one does).
    public static let parentLength = 55
    /// The most list members a `tracestate` may have.
    public static let maximumStateMembers = 32

    /// The trace context of `headers` that a plugin sends on: `traceparent` when it is
    /// well-formed, with `tracestate` when that is too; nil otherwise. So a peer never gets a
    /// malformed value (or one with line breaks) from the router, traced or not. One pass over
    /// the headers and no allocation: it runs on every publish, request and MESSAGE sent.
    public static func outgoing(_ headers: Headers) -> (parent: String, state: String?)? {
        var parent: String?
        var state: String?
        // One pass, the names as literals (as in the plugins' own loops over their headers).
        for field in headers {
            if field.name == "traceparent" {
                parent = parent ?? field.value
            } else if field.name == "tracestate" {
                state = state ?? field.value
            }
        }
        guard let parent, isValidParent(parent) else { return nil }
        guard let state, !state.isEmpty, isValidState(state) else { return (parent, nil) }
        return (parent, state)
    }

    /// Whether `value` is a version 00 `traceparent` a tracer may trust: exactly
    /// ``parentLength`` characters, lowercase hex fields of the right lengths, and trace and
    /// parent ids that are not all zeros. Looks at no more than its length otherwise and
    /// allocates nothing.
    public static func isValidParent(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            guard bytes.count == parentLength, bytes[0] == zero, bytes[1] == zero else { return false }
            guard bytes[2] == dash, bytes[35] == dash, bytes[52] == dash else { return false }
            guard isHex(bytes, 3..<35), isHex(bytes, 36..<52), isHex(bytes, 53..<55) else { return false }
            return !allZero(bytes, 3..<35) && !allZero(bytes, 36..<52)
        }
    }

    /// Whether `value` is a `tracestate` as the specification writes it: at most
    /// ``maximumStateMembers`` `key=value` members separated by commas (spaces allowed after
    /// a comma), keys `vendor` or `tenant@system` of lowercase letters, digits and `_-*/`,
    /// values of printable ASCII without `,` and `=`, and no more than ``maximumStateLength``
    /// bytes. Allocates nothing.
    public static func isValidState(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            guard bytes.count <= maximumStateLength else { return false }
            guard !bytes.isEmpty else { return true }
            var members = 0
            var start = 0
            while true {
                var end = start
                while end < bytes.count, bytes[end] != comma { end += 1 }
                var first = start
                var last = end
                if members > 0 { while first < last, bytes[first] == space { first += 1 } }
                while last > first, bytes[last - 1] == space { last -= 1 }
                guard isStateMember(bytes, first..<last) else { return false }
                members += 1
                guard members <= maximumStateMembers else { return false }
                guard end < bytes.count else { return true }
                start = end + 1
            }
        }
    }

    /// One `key=value` member of a `tracestate`.
    private static func isStateMember(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        guard let equals = range.first(where: { bytes[$0] == equalsSign }) else { return false }
        let key = range.lowerBound..<equals
        let value = (equals + 1)..<range.upperBound
        guard (1...256).contains(value.count), bytes[value.upperBound - 1] != space else { return false }
        guard value.allSatisfy({ bytes[$0] >= space && bytes[$0] <= tilde && bytes[$0] != comma && bytes[$0] != equalsSign }) else {
            return false
        }
        if let at = key.first(where: { bytes[$0] == atSign }) {
            let tenant = key.lowerBound..<at
            let system = (at + 1)..<key.upperBound
            return (1...241).contains(tenant.count) && (1...14).contains(system.count) && isLowercaseLetter(bytes[system.lowerBound])
                && isKeyText(bytes, tenant) && isKeyText(bytes, system)
        }
        return (1...256).contains(key.count) && isLowercaseLetter(bytes[key.lowerBound]) && isKeyText(bytes, key)
    }

    private static func isKeyText(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        range.allSatisfy { index in
            let byte = bytes[index]
            return isLowercaseLetter(byte) || (byte >= zero && byte <= nine) || byte == UInt8(ascii: "_") || byte == dash
                || byte == UInt8(ascii: "*") || byte == UInt8(ascii: "/")
        }
    }

    private static func isLowercaseLetter(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }

    private static let space = UInt8(ascii: " ")
    private static let tilde = UInt8(ascii: "~")
    private static let comma = UInt8(ascii: ",")
    private static let equalsSign = UInt8(ascii: "=")
    private static let atSign = UInt8(ascii: "@")
    private static let nine = UInt8(ascii: "9")
    private static let dash = UInt8(ascii: "-")
    private static let zero = UInt8(ascii: "0")
    private static let letterF = UInt8(ascii: "f")

    private static func isHex(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        range.allSatisfy { index in
            let byte = bytes[index]
            return (byte >= zero && byte <= nine) || (byte >= UInt8(ascii: "a") && byte <= letterF)
        }
    }

    private static func allZero(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        range.allSatisfy { bytes[$0] == zero }
    }
}
