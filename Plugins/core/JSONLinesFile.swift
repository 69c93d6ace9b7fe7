import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// Appends one JSON line per envelope to a file; a line is flushed (and optionally fsynced)
/// before the delivery is acknowledged.
final class JSONLinesFile: Sendable {
    /// The open file; nil once closed.
    private let file: Locked<UnsafeMutablePointer<FILE>?>
    private let path: String
    private let writesEnvelopes: Bool
    private let syncs: Bool

    init(path: String, writesEnvelopes: Bool, syncs: Bool) throws {
        guard let handle = fopen(path, "a") else {
            throw PluginError("cannot open \(path) for appending: \(String(cString: strerror(errno)))")
        }
        file = Locked(handle)
        self.path = path
        self.writesEnvelopes = writesEnvelopes
        self.syncs = syncs
    }

    func append(_ envelope: Envelope) throws {
        try write(writesEnvelopes ? envelope.jsonObject().serializedBytes() : Self.bodyLine(envelope))
    }

    /// ``append(_:)`` of an envelope the router lent: with `format: body`, a JSON body is
    /// compacted straight from the router's memory, so the common case copies nothing else.
    func append(borrowing envelope: borrowing BorrowedEnvelope) throws {
        guard !writesEnvelopes else { return try append(envelope.copy()) }
        let isText = envelope.contentTypeHasPrefix("text/")
        try write(envelope.withBody { Self.bodyLine($0, isText: isText) })
    }

    /// Writes `line` and its line break, flushed (and fsynced when asked) before it returns.
    private func write(_ line: consuming [UInt8]) throws {
        // Owned, so the line break goes into the capacity the line was made with.
        line.append(0x0A)
        try file.withLock { handle throws(PluginError) in
            guard let handle else { throw PluginError("\(path) is closed") }
            let written = line.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, handle) }
            guard written == line.count, fflush(handle) == 0 else {
                throw PluginError("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            if syncs, fsync(fileno(handle)) != 0 {
                throw PluginError("cannot fsync \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The body as one JSON line: a JSON body copied without the white space between its
    /// tokens (checked, not parsed into a tree), anything else as `decodedBody()` makes it (a
    /// text body, or one that is not JSON, as a string).
    static func bodyLine(_ envelope: Envelope) -> [UInt8] {
        envelope.body.withUnsafeBufferPointer { bodyLine($0, isText: envelope.contentType.hasPrefix("text/")) }
    }

    /// ``bodyLine(_:)`` of a body in memory someone else owns. A body `compacted` refuses is
    /// one `Envelope.decodedBody()` would not parse either, so it is written as its text.
    static func bodyLine(_ body: UnsafeBufferPointer<UInt8>, isText: Bool) -> [UInt8] {
        if body.isEmpty { return JSONValue.null.serializedBytes() }
        if !isText, let line = JSONLine.compacted(body) { return line }
        return JSONValue.string(String(decoding: body, as: UTF8.self)).serializedBytes()
    }

    func close() {
        file.withLock { handle in
            if let handle { fclose(handle) }
            handle = nil
        }
    }
}
