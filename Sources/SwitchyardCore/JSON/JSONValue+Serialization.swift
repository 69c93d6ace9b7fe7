extension JSONValue {
    /// Compact JSON text with object keys sorted.
    public func serialized() -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        write(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Compact JSON as UTF-8 bytes with object keys sorted.
    public func serializedBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        write(to: &bytes)
        return bytes
    }

    /// Appends compact JSON (keys sorted) to `output`.
    public func write(to output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value): output.append(contentsOf: String(value).utf8)
        case .double(let value):
            if value.isFinite {
                if value.rounded() == value, abs(value) < 1e15 {
                    output.append(contentsOf: String(Int(value)).utf8)
                } else {
                    output.append(contentsOf: "\(value)".utf8)
                }
            } else {
                output.append(contentsOf: "null".utf8)  // JSON has no NaN or infinity
            }
        case .string(let value): Self.writeString(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                members[key]?.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `string` as a JSON string literal, escaping as RFC 8259 requires.
    public static func writeString(_ string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
