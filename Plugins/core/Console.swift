import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// Standard input as a source of `core.Line` envelopes, standard output as a sink.
final class Console: Sendable {
    /// Serialises stdout writes; counts the lines written.
    private let written = Locked<Int>(0)
    private let gate: SourceGate<Void>
    private let printsEnvelopes: Bool

    init(context: PluginContext, printsEnvelopes: Bool) {
        self.printsEnvelopes = printsEnvelopes
        gate = SourceGate(context: context, port: "lines")
    }

    func start() {
        let thread = Thread { [self] in readLines() }
        thread.name = "core.console"
        thread.start()
    }

    func stop() { gate.stop() }

    /// The router has room on `lines` again.
    func resume() { gate.resume() }

    private func readLines() {
        while let line = readLine(strippingNewline: true) {
            if gate.isStopped { return }
            let envelope = Envelope(type: "core.Line", subject: "stdin", contentType: "text/plain", body: Array(line.utf8))
            // While a route is full, standard input is not read: the writer blocks on the pipe.
            guard gate.emit(envelope) else { return }
        }
        // Standard input ended: nothing more comes on `lines`.
        gate.finished()
    }

    func print(_ envelope: Envelope) {
        var line = printsEnvelopes ? envelope.jsonObject().serializedBytes() : envelope.body
        line.append(0x0A)
        written.withLock { written in
            written &+= 1
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(STDOUT_FILENO, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }
}
