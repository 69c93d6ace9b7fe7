internal import SwitchyardABI
internal import SwitchyardBridge
public import SwitchyardCore

/// An envelope the router lends a sink for one ``SwitchyardPlugin/deliver(borrowing:on:delivery:)``
/// call: views of the router's memory, read in place.
///
/// The ABI lends every envelope it passes only until the call returns (section 2 of
/// `switchyard_plugin.h`). This type keeps that rule in the compiler: it is noncopyable and
/// passed `borrowing`, so it cannot be stored or captured by a closure that outlives the call.
/// A sink that hands the envelope to another thread keeps what it needs — the body's bytes
/// in its own buffer, a string — or the whole envelope with ``copy()``.
public struct BorrowedEnvelope: ~Copyable {
    private let view: UnsafePointer<sy_envelope>

    /// A view of `view`, or nil when it is shorter than every version 2 envelope.
    init?(_ view: UnsafePointer<sy_envelope>) {
        guard Int(view.pointee.struct_size) >= MemoryLayout<sy_envelope>.size else { return nil }
        self.view = view
    }

    /// A view of an envelope this SDK laid out itself (``EnvelopeBridge/withCEnvelope(_:_:)``).
    fileprivate init(lentBySelf view: UnsafePointer<sy_envelope>) { self.view = view }

    /// The envelope type (a copy).
    public var type: String { view.pointee.type.string }

    /// Whether the envelope's type is `type`, compared in place.
    public func hasType(_ type: String) -> Bool { view.pointee.type.equals(type) }

    /// Whether the envelope's type is one of `types`, compared in place.
    public func hasType(anyOf types: [String]) -> Bool { Self.isAny(of: types, view.pointee.type) }

    /// The subject (a copy).
    public var subject: String { view.pointee.subject.string }

    /// The content type (shared, not copied, for the common ones).
    public var contentType: String { EnvelopeBridge.contentType(view.pointee.content_type) }

    /// Whether the content type is `contentType` (empty: none), compared in place.
    public func hasContentType(_ contentType: String) -> Bool { view.pointee.content_type.equals(contentType) }

    /// Whether the content type starts with `prefix`, compared in place.
    public func contentTypeHasPrefix(_ prefix: StaticString) -> Bool { view.pointee.content_type.hasPrefix(prefix) }

    /// When the envelope was made, in nanoseconds since the epoch.
    public var time: Int64 { view.pointee.time_unix_nanos }

    /// How many headers the envelope has.
    public var headerCount: Int { view.pointee.headers == nil ? 0 : view.pointee.header_count }

    /// The value of the first header named `name` (a copy), or nil.
    public func header(_ name: String) -> String? {
        guard let headers = view.pointee.headers else { return nil }
        for index in 0..<view.pointee.header_count where headers[index].name.equals(name) {
            return headers[index].value.string
        }
        return nil
    }

    /// Whether every header's name is one of `names`, compared in place: how a sink tells an
    /// envelope it can read in place from one that needs its general path.
    public func headersAreAll(in names: [String]) -> Bool {
        guard let headers = view.pointee.headers else { return true }
        for index in 0..<view.pointee.header_count where !Self.isAny(of: names, headers[index].name) {
            return false
        }
        return true
    }

    /// Calls `body` with the body's bytes, valid only during the call.
    public func withBody<Result, Failure: Error>(
        _ body: (UnsafeBufferPointer<UInt8>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let bytes = view.pointee.body
        return try body(UnsafeBufferPointer(start: bytes.length > 0 ? bytes.data : nil, count: bytes.length))
    }

    /// The body's byte count.
    public var bodyCount: Int { view.pointee.body.length }

    /// The whole envelope as an ``Envelope`` to keep: every field copied.
    public func copy() -> Envelope {
        EnvelopeBridge.envelope(
            fromV1: UnsafeRawPointer(view).advanced(by: EnvelopeBridge.versionOneOffset).assumingMemoryBound(to: sy_envelope_v1.self))
    }

    /// Whether `bytes` is one of `texts`. Through the array's buffer: iterating the array
    /// itself is a call per element where the compiler does not specialise it (debug builds).
    private static func isAny(of texts: [String], _ bytes: sy_bytes) -> Bool {
        texts.withUnsafeBufferPointer { texts in
            for index in texts.indices where bytes.equals(texts[index]) { return true }
            return false
        }
    }
}

extension Envelope {
    /// Lends this envelope as a ``BorrowedEnvelope`` for the length of `body`: how a sink's
    /// tests (and a plugin that delivers to itself) call
    /// ``SwitchyardPlugin/deliver(borrowing:on:delivery:)``.
    public func lend<Value, Failure: Error>(_ body: (borrowing BorrowedEnvelope) throws(Failure) -> Value) throws(Failure) -> Value {
        let outcome: Result<Value, Failure> = EnvelopeBridge.withCEnvelope(self) { view in
            do throws(Failure) {
                return .success(try body(BorrowedEnvelope(lentBySelf: view)))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
