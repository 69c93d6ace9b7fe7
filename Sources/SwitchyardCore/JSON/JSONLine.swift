/// JSON text made into one line of a JSON-lines file without building a ``JSONValue`` tree:
/// the `core` plugin's `file` sink with `format: body` writes every envelope's body, and
/// parsing each one only to serialise it again cost it more than the write.
public enum JSONLine {
    /// How deep arrays and objects may nest (as `JSONValue(parsing:)` allows).
    public static let maximumDepth = JSONParser.maximumDepth

    /// `bytes` checked as one RFC 8259 JSON value (valid UTF-8, nesting at most
    /// ``maximumDepth`` deep, white space allowed around it) and copied without the white space
    /// between its tokens, so the copy holds no line break; `nil` when `bytes` is not JSON.
    /// Members keep their order and numbers their text.
    public static func compacted(_ bytes: [UInt8]) -> [UInt8]? {
        bytes.withUnsafeBufferPointer { compacted($0) }
    }

    /// ``compacted(_:)`` of bytes in memory someone else owns (a sink's borrowed body).
    public static func compacted(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        // Text that cannot start a JSON value is refused before the copy's buffer is made.
        guard let first = bytes.first(where: { !JSONParser.isWhitespace($0) }), Self.canStartValue(first) else { return nil }
        var copier = Copier(bytes: bytes)
        return copier.copyDocument() ? copier.output : nil
    }

    static func canStartValue(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "\""), UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            return true
        default:
            return false
        }
    }

    /// One pass over the input: a loop with an explicit stack of open containers (no recursion,
    /// so a hostile nesting cannot exhaust the thread's stack).
    private struct Copier {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var output: [UInt8] = []
        /// `{` or `[` per open container.
        var open: [UInt8] = []
        var sawNonASCII = false

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            output.reserveCapacity(bytes.count + 1)
        }

        mutating func copyDocument() -> Bool {
            var expectingValue = true
            while true {
                skipWhitespace()
                if expectingValue {
                    guard index < bytes.count else { return false }
                    switch bytes[index] {
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        guard open.count < JSONLine.maximumDepth else { return false }
                        let opening = bytes[index]
                        open.append(opening)
                        output.append(opening)
                        index += 1
                        skipWhitespace()
                        let closing = opening == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                        if index < bytes.count, bytes[index] == closing {
                            open.removeLast()
                            output.append(closing)
                            index += 1
                            expectingValue = false
                        } else if opening == UInt8(ascii: "{") {
                            guard copyKey() else { return false }
                        }
                    default:
                        guard copyScalar() else { return false }
                        expectingValue = false
                    }
                    continue
                }
                guard let container = open.last else {
                    guard index == bytes.count else { return false }
                    return sawNonASCII ? Self.isValidUTF8(output) : true
                }
                guard index < bytes.count else { return false }
                let byte = bytes[index]
                index += 1
                output.append(byte)
                switch byte {
                case UInt8(ascii: ","):
                    if container == UInt8(ascii: "{") {
                        skipWhitespace()
                        guard copyKey() else { return false }
                    }
                    expectingValue = true
                case UInt8(ascii: "}") where container == UInt8(ascii: "{"), UInt8(ascii: "]") where container == UInt8(ascii: "["):
                    open.removeLast()
                default:
                    return false
                }
            }
        }

        mutating func skipWhitespace() {
            while index < bytes.count, JSONParser.isWhitespace(bytes[index]) { index += 1 }
        }

        /// A member's name and the colon after it.
        mutating func copyKey() -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), copyString() else { return false }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
            output.append(UInt8(ascii: ":"))
            index += 1
            return true
        }

        mutating func copyScalar() -> Bool {
            switch bytes[index] {
            case UInt8(ascii: "\""): return copyString()
            case UInt8(ascii: "t"): return copyLiteral("true")
            case UInt8(ascii: "f"): return copyLiteral("false")
            case UInt8(ascii: "n"): return copyLiteral("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return copyNumber()
            default: return false
            }
        }

        mutating func copyLiteral(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard count <= bytes.count - index else { return false }
            let matches = literal.withUTF8Buffer { bytes[index..<index + count].elementsEqual($0) }
            guard matches else { return false }
            output.append(contentsOf: bytes[index..<index + count])
            index += count
            return true
        }

        /// A string as written, escapes included: checked, not decoded (UTF-8 is checked once
        /// over the whole copy at the end).
        mutating func copyString() -> Bool {
            let start = index
            index += 1
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    output.append(contentsOf: bytes[start..<index])
                    return true
                case UInt8(ascii: "\\"):
                    guard skipEscape() else { return false }
                case 0..<0x20:
                    return false
                default:
                    if byte >= 0x80 { sawNonASCII = true }
                    index += 1
                }
            }
            return false
        }

        /// One escape sequence, `\uD83D\uDE00` (a surrogate pair) counting as one; a lone
        /// surrogate is refused as the parser refuses it.
        mutating func skipEscape() -> Bool {
            guard index + 1 < bytes.count else { return false }
            switch bytes[index + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                UInt8(ascii: "r"), UInt8(ascii: "t"):
                index += 2
                return true
            case UInt8(ascii: "u"):
                guard let code = hex4(at: index + 2) else { return false }
                index += 6
                if (0xDC00..<0xE000).contains(code) { return false }
                guard (0xD800..<0xDC00).contains(code) else { return true }
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u"),
                    let low = hex4(at: index + 2), (0xDC00..<0xE000).contains(low)
                else { return false }
                index += 6
                return true
            default:
                return false
            }
        }

        func hex4(at start: Int) -> UInt32? {
            guard start <= bytes.count - 4 else { return nil }
            var value: UInt32 = 0
            for byte in bytes[start..<start + 4] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }

        mutating func copyNumber() -> Bool {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { return false }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if index < bytes.count, isDigit(bytes[index]) { return false }
            } else {
                skipDigits()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { return false }
                skipDigits()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard index < bytes.count, isDigit(bytes[index]) else { return false }
                skipDigits()
            }
            output.append(contentsOf: bytes[start..<index])
            return true
        }

        mutating func skipDigits() {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
            var iterator = bytes.makeIterator()
            var decoder = UTF8()
            while true {
                switch decoder.decode(&iterator) {
                case .scalarValue: continue
                case .emptyInput: return true
                case .error: return false
                }
            }
        }
    }
}
