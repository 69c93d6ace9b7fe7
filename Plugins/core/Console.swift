import Foundation
import SwitchyardCore
import SwitchyardPluginKit

/// Standard input as a source of `core.Line` envelopes, standard output as a sink.
final class Console: @unchecked Sendable {
    // `stopped` is guarded by `lock`; stdout writes are serialised by it too.
    private let lock = NSLock()
    private var stopped = false
    private let context: PluginContext
    private let printsEnvelopes: Bool

    init(context: PluginContext, printsEnvelopes: Bool) {
        self.context = context
        self.printsEnvelopes = printsEnvelopes
    }

    func start() {
        let thread = Thread { [self] in readLines() }
        thread.name = "core.console"
        thread.start()
    }

    func stop() {
        lock.withLock { stopped = true }
    }

    private func readLines() {
        while let line = readLine(strippingNewline: true) {
            if lock.withLock({ stopped }) { return }
            let envelope = Envelope(type: "core.Line", subject: "stdin", contentType: "text/plain", body: Array(line.utf8))
            while context.emit(envelope, on: "lines") == .full {
                // Standard input has no flow control of its own: yield and try again.
                Thread.sleep(forTimeInterval: 0.001)
                if lock.withLock({ stopped }) { return }
            }
        }
    }

    func print(_ envelope: Envelope) {
        var line = printsEnvelopes ? envelope.jsonObject().serializedBytes() : envelope.body
        line.append(0x0A)
        lock.withLock {
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
