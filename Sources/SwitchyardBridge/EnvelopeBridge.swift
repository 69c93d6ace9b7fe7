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
        guard length == text.utf8CodeUnitCount else { return false }
        guard length > 0, let data else { return true }
        return memcmp(data, text.utf8Start, length) == 0
    }
}

/// Converts between ``Envelope`` and the C `sy_envelope` of the ABI. Shared by the SDK and the
/// router, so both sides agree on every field.
public enum EnvelopeBridge {
    /// Calls `body` with a borrowed C view of `envelope`, valid only during the call. Makes
    /// no heap allocation: strings are viewed in place, header and trace views live on the
    /// stack.
    @inlinable
    public static func withCEnvelope<Result>(
        _ envelope: Envelope,
        _ body: (UnsafePointer<sy_envelope>) -> Result
    ) -> Result {
        var id = envelope.id
        var type = envelope.type
        var source = envelope.source
        var subject = envelope.subject
        var contentType = envelope.contentType
        return id.withUTF8 { id in
            type.withUTF8 { type in
                source.withUTF8 { source in
                    subject.withUTF8 { subject in
                        contentType.withUTF8 { contentType in
                            withStringViews(envelope.headers.fields.flatMap { [$0.name, $0.value] }) { headerViews in
                                withStringViews(envelope.trace) { trace in
                                    withUnsafeTemporaryAllocation(of: sy_header.self, capacity: max(1, envelope.headers.count)) { headers in
                                        for index in 0..<envelope.headers.count {
                                            headers[index] = sy_header(name: headerViews[2 * index], value: headerViews[2 * index + 1])
                                        }
                                        return envelope.body.withUnsafeBufferPointer { bodyBytes in
                                            envelope.session.withUnsafeBufferPointer { sessionBytes in
                                                var cEnvelope = sy_envelope(
                                                    id: sy_bytes(id), type: sy_bytes(type), source: sy_bytes(source),
                                                    subject: sy_bytes(subject),
                                                    time_unix_nanos: envelope.time,
                                                    headers: envelope.headers.count == 0 ? nil : UnsafePointer(headers.baseAddress),
                                                    header_count: envelope.headers.count,
                                                    content_type: sy_bytes(contentType),
                                                    body: sy_bytes(bodyBytes),
                                                    trace: trace.isEmpty ? nil : trace.baseAddress,
                                                    trace_count: trace.count,
                                                    session: sy_bytes(sessionBytes)
                                                )
                                                return withUnsafePointer(to: &cEnvelope) { body($0) }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Views of `strings`' UTF-8, copied into one stack buffer, valid during `body`.
    @usableFromInline
    static func withStringViews<Result>(_ strings: [String], _ body: (UnsafeBufferPointer<sy_bytes>) -> Result) -> Result {
        if strings.isEmpty { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        let total = strings.reduce(0) { $0 + $1.utf8.count }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, total)) { bytes in
            withUnsafeTemporaryAllocation(of: sy_bytes.self, capacity: strings.count) { views in
                var offset = 0
                for (index, string) in strings.enumerated() {
                    let start = offset
                    for byte in string.utf8 {
                        bytes[offset] = byte
                        offset += 1
                    }
                    views[index] = sy_bytes(data: bytes.baseAddress.map { UnsafePointer($0 + start) }, length: offset - start)
                }
                return body(UnsafeBufferPointer(views))
            }
        }
    }

    /// Common content types, so copying one in does not allocate a string each time.
    private static let knownContentTypes: [(bytes: [UInt8], text: String)] = [
        "application/json", "text/plain", "text/plain; charset=utf-8", "application/octet-stream",
    ].map { (Array($0.utf8), $0) }

    static func contentType(_ view: sy_bytes) -> String {
        for known in knownContentTypes where known.bytes.count == view.length {
            let same = known.bytes.withUnsafeBufferPointer { own in
                guard let data = view.data, let base = own.baseAddress else { return view.length == 0 }
                return memcmp(base, data, view.length) == 0
            }
            if same { return known.text }
        }
        return view.string
    }

    /// Copies a C envelope into an ``Envelope``.
    public static func envelope(from cEnvelope: UnsafePointer<sy_envelope>) -> Envelope {
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
