public import SwitchyardCore
public import SwitchyardABI

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
    /// Calls `body` with a borrowed C view of `envelope`, valid only during the call.
    public static func withCEnvelope<Result>(
        _ envelope: Envelope,
        _ body: (UnsafePointer<sy_envelope>) -> Result
    ) -> Result {
        // Gather every string's bytes into one contiguous buffer so the views need no
        // per-field allocation; headers and trace get small arrays of views into it.
        var storage: [UInt8] = []
        storage.reserveCapacity(
            envelope.id.utf8.count + envelope.type.utf8.count + envelope.source.utf8.count + envelope.subject.utf8.count
                + envelope.contentType.utf8.count + envelope.headers.fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
                + envelope.trace.reduce(0) { $0 + $1.utf8.count }
        )
        var ranges: [Range<Int>] = []
        func add(_ text: String) {
            let start = storage.count
            storage.append(contentsOf: text.utf8)
            ranges.append(start..<storage.count)
        }
        add(envelope.id)
        add(envelope.type)
        add(envelope.source)
        add(envelope.subject)
        add(envelope.contentType)
        for header in envelope.headers.fields {
            add(header.name)
            add(header.value)
        }
        for hop in envelope.trace { add(hop) }
        return storage.withUnsafeBufferPointer { strings in
            func view(_ index: Int) -> sy_bytes {
                let range = ranges[index]
                return sy_bytes(data: strings.baseAddress.map { $0 + range.lowerBound }, length: range.count)
            }
            let headerCount = envelope.headers.count
            let traceCount = envelope.trace.count
            return withUnsafeTemporaryAllocation(of: sy_header.self, capacity: max(1, headerCount)) { headers in
                for index in 0..<headerCount {
                    headers[index] = sy_header(name: view(5 + 2 * index), value: view(6 + 2 * index))
                }
                return withUnsafeTemporaryAllocation(of: sy_bytes.self, capacity: max(1, traceCount)) { trace in
                    for index in 0..<traceCount { trace[index] = view(5 + 2 * headerCount + index) }
                    return envelope.body.withUnsafeBufferPointer { bodyBytes in
                        envelope.session.withUnsafeBufferPointer { sessionBytes in
                            var cEnvelope = sy_envelope(
                                id: view(0), type: view(1), source: view(2), subject: view(3),
                                time_unix_nanos: envelope.time,
                                headers: headerCount == 0 ? nil : UnsafePointer(headers.baseAddress),
                                header_count: headerCount,
                                content_type: view(4),
                                body: sy_bytes(bodyBytes),
                                trace: traceCount == 0 ? nil : UnsafePointer(trace.baseAddress),
                                trace_count: traceCount,
                                session: sy_bytes(sessionBytes)
                            )
                            return withUnsafePointer(to: &cEnvelope) { body($0) }
                        }
                    }
                }
            }
        }
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
            contentType: raw.content_type.string,
            body: raw.body.array,
            trace: trace,
            session: raw.session.array
        )
    }
}
