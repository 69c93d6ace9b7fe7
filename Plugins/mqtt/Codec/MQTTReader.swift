import NIOCore

/// The largest value a variable byte integer can hold (four bytes of seven bits).
let maximumVariableByteInteger = 268_435_455

/// Reads the data types of MQTT from the body of one packet, which has already arrived whole.
///
/// Every read checks the bytes are there: running out is a malformed packet, never a crash, and
/// nothing is allocated before the bytes it describes are known to exist.
struct MQTTReader {
    private var buffer: ByteBuffer

    /// Reads from `buffer`'s readable bytes.
    init(_ buffer: ByteBuffer) {
        self.buffer = buffer
    }

    /// The number of bytes not read yet.
    var remaining: Int { buffer.readableBytes }

    /// Whether every byte has been read.
    var isAtEnd: Bool { buffer.readableBytes == 0 }

    /// Throws unless every byte has been read.
    func expectEnd(after what: String) throws(MQTTCodecError) {
        guard isAtEnd else { throw .malformed("\(remaining) unexpected bytes after the \(what)") }
    }

    /// Reads a byte.
    mutating func readByte(_ field: String) throws(MQTTCodecError) -> UInt8 {
        guard let value = buffer.readInteger(as: UInt8.self) else { throw .malformed("\(field) is missing") }
        return value
    }

    /// Reads a big-endian two-byte integer.
    mutating func readUInt16(_ field: String) throws(MQTTCodecError) -> UInt16 {
        guard let value = buffer.readInteger(as: UInt16.self) else { throw .malformed("\(field) is truncated") }
        return value
    }

    /// Reads a big-endian four-byte integer.
    mutating func readUInt32(_ field: String) throws(MQTTCodecError) -> UInt32 {
        guard let value = buffer.readInteger(as: UInt32.self) else { throw .malformed("\(field) is truncated") }
        return value
    }

    /// Reads a variable byte integer of at most four bytes.
    mutating func readVariableByteInteger(_ field: String) throws(MQTTCodecError) -> Int {
        var value = 0
        for position in 0..<4 {
            guard let byte = buffer.readInteger(as: UInt8.self) else { throw .malformed("\(field) is truncated") }
            value |= Int(byte & 0x7F) << (7 * position)
            if byte & 0x80 == 0 { return value }
        }
        throw .malformed("\(field) is a variable byte integer longer than 4 bytes")
    }

    /// Reads a non-zero packet identifier.
    mutating func readPacketID() throws(MQTTCodecError) -> UInt16 {
        let id = try readUInt16("packet identifier")
        guard id != 0 else { throw .protocolViolation("packet identifier is 0") }
        return id
    }

    /// Reads two-byte-length-prefixed binary data.
    mutating func readBinary(_ field: String) throws(MQTTCodecError) -> [UInt8] {
        let length = Int(try readUInt16("\(field) length"))
        guard let bytes = buffer.readBytes(length: length) else { throw .malformed("\(field) is truncated") }
        return bytes
    }

    /// Reads a two-byte-length-prefixed UTF-8 string: well-formed UTF-8 without U+0000.
    mutating func readString(_ field: String) throws(MQTTCodecError) -> String {
        let length = Int(try readUInt16("\(field) length"))
        guard let slice = buffer.readSlice(length: length) else { throw .malformed("\(field) is truncated") }
        guard let string = slice.withUnsafeReadableBytes({ String(validating: $0, as: UTF8.self) }) else {
            throw .malformed("\(field) is not valid UTF-8")
        }
        guard !slice.withUnsafeReadableBytes({ $0.contains(0) }) else { throw .malformed("\(field) contains U+0000") }
        return string
    }

    /// Reads every remaining byte.
    mutating func readRest() -> [UInt8] {
        buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    /// Reads the next `length` bytes as a reader of their own.
    mutating func readReader(length: Int, _ field: String) throws(MQTTCodecError) -> MQTTReader {
        guard length <= buffer.readableBytes, let slice = buffer.readSlice(length: length) else {
            throw .malformed("\(field) of \(length) bytes exceeds the \(buffer.readableBytes) bytes left")
        }
        return MQTTReader(slice)
    }
}
