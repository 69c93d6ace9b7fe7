/// A compact, versioned binary form of an envelope: what the durable spool stores.
///
/// Layout (version 1): the byte `1`, then id, type, source, subject as length-prefixed
/// UTF-8, the time as 8 little-endian bytes, the header count and each name and value, the
/// content type, the body, the trace count and each name, the session. Lengths and counts
/// are LEB128 varints.
extension Envelope {
    /// The format version ``serializedBytes()`` writes.
    public static let binaryFormatVersion: UInt8 = 1

    /// The envelope in its binary form.
    public func serializedBytes() -> [UInt8] {
        var writer = BinaryWriter()
        writer.bytes.reserveCapacity(64 + id.utf8.count + type.utf8.count + subject.utf8.count + body.count)
        writer.bytes.append(Self.binaryFormatVersion)
        writer.write(id)
        writer.write(type)
        writer.write(source)
        writer.write(subject)
        writer.write(time)
        writer.write(varint: UInt64(headers.count))
        for field in headers {
            writer.write(field.name)
            writer.write(field.value)
        }
        writer.write(contentType)
        writer.write(bytes: body)
        writer.write(varint: UInt64(trace.count))
        for name in trace { writer.write(name) }
        writer.write(bytes: session)
        return writer.bytes
    }

    /// Reads an envelope written by ``serializedBytes()``.
    public init(serialized bytes: [UInt8]) throws(EnvelopeDecodingError) {
        var reader = BinaryReader(bytes: bytes)
        let version = try reader.byte()
        guard version == Self.binaryFormatVersion else { throw EnvelopeDecodingError("unknown envelope format version \(version)") }
        let id = try reader.string()
        let type = try reader.string()
        let source = try reader.string()
        let subject = try reader.string()
        let time = try reader.int64()
        var headers = Headers()
        for _ in 0..<(try reader.count()) { headers.append(name: try reader.string(), value: try reader.string()) }
        let contentType = try reader.string()
        let body = try reader.byteArray()
        var trace: [String] = []
        for _ in 0..<(try reader.count()) { trace.append(try reader.string()) }
        let session = try reader.byteArray()
        guard reader.isAtEnd else { throw EnvelopeDecodingError("\(reader.remaining) bytes after the envelope") }
        self.init(
            id: id, type: type, source: source, subject: subject, time: time, headers: headers, contentType: contentType, body: body,
            trace: trace, session: session)
    }
}

/// Bytes that are not an envelope in binary form.
public struct EnvelopeDecodingError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public var description: String

    init(_ description: String) { self.description = description }
}

private struct BinaryWriter {
    var bytes: [UInt8] = []

    mutating func write(varint value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func write(_ text: String) {
        write(varint: UInt64(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    mutating func write(bytes more: [UInt8]) {
        write(varint: UInt64(more.count))
        bytes.append(contentsOf: more)
    }

    mutating func write(_ value: Int64) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }
}

private struct BinaryReader {
    let bytes: [UInt8]
    var offset = 0

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func byte() throws(EnvelopeDecodingError) -> UInt8 {
        guard offset < bytes.count else { throw EnvelopeDecodingError("envelope truncated at byte \(offset)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint() throws(EnvelopeDecodingError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte()
            guard shift < 64 else { throw EnvelopeDecodingError("length too long at byte \(offset)") }
            value |= UInt64(next & 0x7f) << shift
            if next < 0x80 { return value }
            shift += 7
        }
    }

    /// A length or count, which can never exceed the bytes left.
    mutating func count() throws(EnvelopeDecodingError) -> Int {
        let value = try varint()
        guard value <= UInt64(remaining) else { throw EnvelopeDecodingError("length \(value) past the end at byte \(offset)") }
        return Int(value)
    }

    mutating func byteArray() throws(EnvelopeDecodingError) -> [UInt8] {
        let length = try count()
        defer { offset += length }
        return Array(bytes[offset..<offset + length])
    }

    mutating func string() throws(EnvelopeDecodingError) -> String {
        let raw = try byteArray()
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw EnvelopeDecodingError("invalid UTF-8 before byte \(offset)")
        }
        return text
    }

    mutating func int64() throws(EnvelopeDecodingError) -> Int64 {
        guard remaining >= 8 else { throw EnvelopeDecodingError("envelope truncated at byte \(offset)") }
        var bits: UInt64 = 0
        for index in 0..<8 { bits |= UInt64(bytes[offset + index]) << UInt64(index * 8) }
        offset += 8
        return Int64(bitPattern: bits)
    }
}
