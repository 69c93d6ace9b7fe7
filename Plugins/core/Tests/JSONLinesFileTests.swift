import Foundation
import SwitchyardCore
import SwitchyardPluginKit
import Testing

@testable import CorePlugin

/// The file sink writes an envelope the router lent it exactly as it writes its copy, and a
/// body line means what the body means.
struct JSONLinesFileTests {
    static let envelopes: [Envelope] = [
        Envelope(type: "t", contentType: "application/json", body: Array(#" { "a" : [1, 2.5e3, "x y"], "b": null } "#.utf8)),
        Envelope(type: "t", body: Array(#"{"count": 4242}"#.utf8)),
        Envelope(type: "t", contentType: "text/plain", body: Array(#"{"not": "parsed"}"#.utf8)),
        Envelope(type: "t", contentType: "application/octet-stream", body: Array("hello, world".utf8)),
        Envelope(type: "t", body: Array("12 apples".utf8)),
        Envelope(type: "t", body: Array(#"{"open": "#.utf8)),
        Envelope(type: "t", body: [0xFF, 0xFE, 0x41]),
        Envelope(type: "t", body: Array("\"quoted\\u00e9\"".utf8)),
        Envelope(type: "t", body: Array("  true ".utf8)),
        Envelope(type: "t", body: []),
        Envelope(type: "t", contentType: "text/plain; charset=utf-8", body: Array("line one\nline two".utf8)),
    ]

    @Test(arguments: [false, true])
    func aLentEnvelopeIsWrittenAsItsCopyIs(writesEnvelopes: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("core-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let lentPath = directory.appendingPathComponent("lent.jsonl").path
        let copiedPath = directory.appendingPathComponent("copied.jsonl").path
        let lent = try JSONLinesFile(path: lentPath, writesEnvelopes: writesEnvelopes, syncs: false)
        let copied = try JSONLinesFile(path: copiedPath, writesEnvelopes: writesEnvelopes, syncs: false)
        for envelope in Self.envelopes {
            try envelope.lend { try lent.append(borrowing: $0) }
            try copied.append(envelope)
        }
        lent.close()
        copied.close()
        let lentLines = try String(contentsOfFile: lentPath, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let copiedLines = try String(contentsOfFile: copiedPath, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lentLines == copiedLines)
        #expect(lentLines.count == Self.envelopes.count + 1)
        guard !writesEnvelopes else { return }
        for (line, envelope) in zip(lentLines, Self.envelopes) {
            #expect(try JSONValue(parsing: Array(line.utf8)) == envelope.decodedBody(), "\(line)")
        }
    }
}
