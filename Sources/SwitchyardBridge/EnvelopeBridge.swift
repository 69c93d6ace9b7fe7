public import SwitchyardABI
public import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension sy_bytes {
    /// A view of `buffer`, valid as long as the buffer is.
    public init(_ buffer: UnsafeBufferPointer<UInt8>) {
        self.init(data: buffer.baseAddress, length: buffer.count)
    }

    /// The bytes as a Swift array (a copy).
    public var array: [UInt8] {
        guard let data, length > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    /// The bytes as a string (a copy; invalid UTF-8 is repaired).
    public var string: String {
        guard let data, length > 0 else { return "" }
        return String(decoding: UnsafeBufferPointer(start: data, count: length), as: UTF8.self)
    }

    /// Whether the bytes equal `text`'s UTF-8 without copying.
    public func equals(_ text: StaticString) -> Bool {
        equals(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Whether the bytes equal `text`'s UTF-8 without copying either.
    public func equals(_ text: String) -> Bool {
        var text = text
        // A closure, not the method itself: a partially applied method is allocated per call
        // where the compiler does not optimise (debug builds), and this runs per header.
        return text.withUTF8 { equals($0) }
    }

    /// Whether the bytes equal `bytes` without copying either.
    public func equals(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { equals($0) }
    }

    /// The one comparison every `equals` and `hasPrefix` makes.
    private func equals(_ own: UnsafeBufferPointer<UInt8>) -> Bool {
        guard own.count == length else { return false }
        guard length > 0 else { return true }
        // A length without bytes (a malformed view from a plugin) equals nothing.
        guard let data, let base = own.baseAddress else { return false }
        return memcmp(data, base, length) == 0
    }

    /// Whether the bytes start with `prefix`'s UTF-8, without copying.
    public func hasPrefix(_ prefix: StaticString) -> Bool {
        guard length >= prefix.utf8CodeUnitCount else { return false }
        return sy_bytes(data: data, length: prefix.utf8CodeUnitCount).equals(prefix)
    }
}

/// Converts between ``Envelope`` and the C `sy_envelope` of the ABI. Shared by the SDK and the
/// router, so both sides agree on every field.
public enum EnvelopeBridge {
    /// Calls `body` with a borrowed C view of `envelope`, valid only during the call. Every
    /// string's bytes, the header table and the trace table share one temporary allocation
    /// (on the stack when small), so a call costs no heap allocation for a typical envelope.
    @inlinable
    public static func withCEnvelope<Result>(
        _ envelope: Envelope,
        _ body: (UnsafePointer<sy_envelope>) -> Result
    ) -> Result {
        let headerCount = envelope.headers.count
        let traceCount = envelope.trace.count
        var textBytes =
            envelope.id.utf8.count + envelope.type.utf8.count + envelope.source.utf8.count + envelope.subject.utf8.count
            + envelope.contentType.utf8.count
        for field in envelope.headers.fields { textBytes += field.name.utf8.count + field.value.utf8.count }
        for name in envelope.trace { textBytes += name.utf8.count }
        let headerBytes = headerCount * MemoryLayout<sy_header>.stride
        let traceBytes = traceCount * MemoryLayout<sy_bytes>.stride
        return withUnsafeTemporaryAllocation(
            byteCount: max(1, headerBytes + traceBytes + textBytes), alignment: MemoryLayout<sy_header>.alignment
        ) { storage in
            // Layout: the header table, then the trace table, then every string's UTF-8.
            let base = storage.baseAddress.unsafelyUnwrapped
            let headers = base.bindMemory(to: sy_header.self, capacity: headerCount)
            let trace = (base + headerBytes).bindMemory(to: sy_bytes.self, capacity: traceCount)
            var text = StringPacker(start: (base + headerBytes + traceBytes).bindMemory(to: UInt8.self, capacity: textBytes))
            let id = text.pack(envelope.id)
            let type = text.pack(envelope.type)
            let source = text.pack(envelope.source)
            let subject = text.pack(envelope.subject)
            let contentType = text.pack(envelope.contentType)
            for (index, field) in envelope.headers.fields.enumerated() {
                (headers + index).initialize(to: sy_header(name: text.pack(field.name), value: text.pack(field.value)))
            }
            for (index, name) in envelope.trace.enumerated() { (trace + index).initialize(to: text.pack(name)) }
            return envelope.body.withUnsafeBufferPointer { bodyBytes in
                envelope.session.withUnsafeBufferPointer { sessionBytes in
                    var cEnvelope = sy_envelope(
                        struct_size: UInt32(MemoryLayout<sy_envelope>.size), reserved: 0,
                        id: id, type: type, source: source, subject: subject,
                        time_unix_nanos: envelope.time,
                        headers: headerCount == 0 ? nil : UnsafePointer(headers),
                        header_count: headerCount,
                        content_type: contentType,
                        body: sy_bytes(bodyBytes),
                        trace: traceCount == 0 ? nil : UnsafePointer(trace),
                        trace_count: traceCount,
                        session: sy_bytes(sessionBytes)
                    )
                    return withUnsafePointer(to: &cEnvelope) { body($0) }
                }
            }
        }
    }

    /// Copies strings one after another into memory sized for them, returning a view of each.
    @usableFromInline
    struct StringPacker {
        @usableFromInline var next: UnsafeMutablePointer<UInt8>

        @inlinable
        init(start: UnsafeMutablePointer<UInt8>) { next = start }

        @inlinable
        mutating func pack(_ string: String) -> sy_bytes {
            let start = next
            let count = string.utf8.count
            let copied =
                string.utf8.withContiguousStorageIfAvailable { (bytes: UnsafeBufferPointer<UInt8>) -> Bool in
                    if let source = bytes.baseAddress { start.initialize(from: source, count: bytes.count) }
                    return true
                } ?? false
            if !copied {
                var cursor = start
                for byte in string.utf8 {
                    cursor.initialize(to: byte)
                    cursor += 1
                }
            }
            next += count
            return sy_bytes(data: UnsafePointer(start), length: count)
        }
    }

    /// Common content types, so copying one in does not allocate a string each time.
    private static let knownContentTypes: [(bytes: [UInt8], text: String)] = [
        "application/json", "text/plain", "text/plain; charset=utf-8", "application/octet-stream",
    ].map { (Array($0.utf8), $0) }

    /// The content type `view` names, without allocating for the common ones.
    public static func contentType(_ view: sy_bytes) -> String {
        for known in knownContentTypes where known.bytes.count == view.length {
            let same = known.bytes.withUnsafeBufferPointer { own in
                guard let data = view.data, let base = own.baseAddress else { return view.length == 0 }
                return memcmp(base, data, view.length) == 0
            }
            if same { return known.text }
        }
        return view.string
    }

    /// Bytes before the fields an ``sy_envelope`` shares with ``sy_envelope_v1``.
    public static let versionOneOffset = MemoryLayout<sy_envelope>.offset(of: \sy_envelope.id) ?? 8

    /// Calls `body` with a borrowed version 1 view of `envelope` (for plugins that negotiated
    /// ABI version 1): the same memory without the leading `struct_size`.
    @inlinable
    public static func withCEnvelopeV1<Result>(_ envelope: Envelope, _ body: (UnsafePointer<sy_envelope_v1>) -> Result) -> Result {
        withCEnvelope(envelope) { cEnvelope in
            body(UnsafeRawPointer(cEnvelope).advanced(by: versionOneOffset).assumingMemoryBound(to: sy_envelope_v1.self))
        }
    }

    /// Copies a C envelope into an ``Envelope``, or nil when its `struct_size` is smaller
    /// than the fields every version 2 envelope has.
    public static func envelope(from cEnvelope: UnsafePointer<sy_envelope>) -> Envelope? {
        guard Int(cEnvelope.pointee.struct_size) >= MemoryLayout<sy_envelope>.size else { return nil }
        return envelope(
            fromV1: UnsafeRawPointer(cEnvelope).advanced(by: versionOneOffset).assumingMemoryBound(to: sy_envelope_v1.self))
    }

    /// Copies a version 1 C envelope into an ``Envelope``.
    public static func envelope(fromV1 cEnvelope: UnsafePointer<sy_envelope_v1>) -> Envelope {
        let raw = cEnvelope.pointee
        var headers: [(name: String, value: String)] = []
        if let cHeaders = raw.headers, raw.header_count > 0 {
            headers.reserveCapacity(raw.header_count)
            for index in 0..<raw.header_count {
                headers.append((cHeaders[index].name.string, cHeaders[index].value.string))
            }
        }
        var trace: [String] = []
        if let cTrace = raw.trace, raw.trace_count > 0 {
            trace.reserveCapacity(raw.trace_count)
            for index in 0..<raw.trace_count { trace.append(cTrace[index].string) }
        }
        return Envelope(
            id: raw.id.string,
            type: raw.type.string,
            source: raw.source.string,
            subject: raw.subject.string,
            time: raw.time_unix_nanos,
            headers: Headers(headers),
            contentType: contentType(raw.content_type),
            body: raw.body.array,
            trace: trace,
            session: raw.session.array
        )
    }
}
