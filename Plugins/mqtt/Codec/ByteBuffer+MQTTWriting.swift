import NIOCore

extension ByteBuffer {
    /// Appends a two-byte-length-prefixed UTF-8 string; throws if it is too long or contains U+0000.
    mutating func writeMQTTString(_ string: String, _ field: String) throws(MQTTCodecError) {
        let length = string.utf8.count
        guard length <= Int(UInt16.max) else { throw .malformed("\(field) is \(length) bytes, over 65535") }
        guard !string.utf8Contains(0) else { throw .malformed("\(field) contains U+0000") }
        writeInteger(UInt16(length))
        writeString(string)
    }

    /// Appends two-byte-length-prefixed binary data; throws if it is longer than 65535 bytes.
    mutating func writeMQTTBinary(_ bytes: [UInt8], _ field: String) throws(MQTTCodecError) {
        guard bytes.count <= Int(UInt16.max) else { throw .malformed("\(field) is \(bytes.count) bytes, over 65535") }
        writeInteger(UInt16(bytes.count))
        writeBytes(bytes)
    }

    /// Appends a variable byte integer; throws if `value` is out of its range.
    mutating func writeVariableByteInteger(_ value: Int, _ field: String) throws(MQTTCodecError) {
        guard (0...maximumVariableByteInteger).contains(value) else {
            throw .malformed("\(field) \(value) is out of the range of a variable byte integer")
        }
        var rest = value
        repeat {
            var byte = UInt8(rest & 0x7F)
            rest >>= 7
            if rest > 0 { byte |= 0x80 }
            writeInteger(byte)
        } while rest > 0
    }

    /// Appends what `body` writes, preceded by its length as a variable byte integer.
    ///
    /// Four bytes are set aside for the length; once it is known the body is moved down over the
    /// bytes the length does not need.
    mutating func writeLengthPrefixed(
        _ what: String, _ body: (inout ByteBuffer) throws(MQTTCodecError) -> Void
    ) throws(MQTTCodecError) {
        let lengthIndex = writerIndex
        writeInteger(UInt32(0))
        let bodyIndex = writerIndex
        try body(&self)
        let length = writerIndex - bodyIndex
        guard length <= maximumVariableByteInteger else {
            throw .packetTooLarge("\(what) of \(length) bytes exceeds the limit of \(maximumVariableByteInteger)")
        }
        let lengthSize = variableByteIntegerSize(length)
        if lengthSize < 4 {
            do {
                try copyBytes(at: bodyIndex, to: lengthIndex + lengthSize, length: length)
            } catch {
                throw .malformed("internal error moving the \(what)")
            }
            moveWriterIndex(to: lengthIndex + lengthSize + length)
        }
        var rest = length
        for offset in 0..<lengthSize {
            var byte = UInt8(rest & 0x7F)
            rest >>= 7
            if offset < lengthSize - 1 { byte |= 0x80 }
            setInteger(byte, at: lengthIndex + offset)
        }
    }
}

/// The number of bytes the variable byte integer encoding of `value` takes.
func variableByteIntegerSize(_ value: Int) -> Int {
    switch value {
    case ..<128: 1
    case ..<16_384: 2
    case ..<2_097_152: 3
    default: 4
    }
}

extension String {
    /// Whether the UTF-8 form holds `byte`: one tight loop over the string's own storage
    /// (topics are checked several times per message; the generic `utf8.contains` is slow).
    func utf8Contains(_ byte: UInt8) -> Bool {
        utf8.withContiguousStorageIfAvailable { $0.contains(byte) } ?? utf8.contains(byte)
    }
}
