import Foundation
import SwitchyardCore
import SwitchyardPluginKit
import Synchronization

/// `late_calls`: a plugin thread that breaks the ABI's rule on purpose. stop() signals it and
/// returns without waiting; the thread then calls the host with its context after stop() has
/// returned, and writes what each call answered into `path` (`name=answer` lines, `done` last).
/// It first repeats a state write until the host refuses it as stopped, since the host
/// retires the context only once stop() has returned.
final class LateCaller: Sendable {
    private let context: PluginContext
    private let path: String
    private let stopped = DispatchSemaphore(value: 0)
    /// The last delivery taken on `collect`: acknowledged again, late.
    private let kept = Mutex<Delivery?>(nil)

    init(context: PluginContext, path: String) {
        self.context = context
        self.path = path
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "testkit.late"
        thread.start()
    }

    func stopWithoutWaiting() { stopped.signal() }

    func keep(_ delivery: Delivery) { kept.withLock { $0 = delivery } }

    private func run() {
        stopped.wait()
        var lines: [String] = []
        let deadline = Date(timeIntervalSinceNow: 10)
        var put = ""
        repeat {
            put = Self.answer { try context.state.setValue([1], forKey: "late") }
            if put == "stopped" { break }
            usleep(1000)
        } while Date() < deadline
        lines.append("state_put=\(put)")
        lines.append("emit=\(context.emit(Envelope(type: "test.Number", subject: "late", body: Array(#"{"n":0}"#.utf8)), on: "numbers"))")
        if let delivery = kept.withLock({ $0 }) {
            delivery.ack(.ok)
            lines.append("ack=sent")
        }
        context.log(.error, "a log line after stop()")
        context.metric(.counter, "late_metric_total", 1)
        lines.append("is_logging=\(context.isLogging(.critical))")
        lines.append("state_get=\(Self.answer { _ = try context.state.value(forKey: "late") })")
        lines.append("done")
        try? (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// `ok`, `stopped` when the host refused the call as stopped, else the error.
    private static func answer(_ call: () throws -> Void) -> String {
        do {
            try call()
            return "ok"
        } catch {
            return "\(error)".contains("has stopped") ? "stopped" : "\(error)"
        }
    }
}

/// `state_check`: exercises the host's state service at start and writes each answer into a
/// file (`name=answer` lines): put, get, scan, delete, the limits, and a key that persists
/// across restarts (`persisted=` shows what an earlier run stored).
struct StateCheck {
    let state: PluginState

    func run(writingTo path: String) {
        var lines: [String] = []
        func text(_ bytes: [UInt8]?) -> String { bytes.map { String(decoding: $0, as: UTF8.self) } ?? "nil" }
        func record(_ name: String, _ body: () throws -> String) {
            do {
                lines.append("\(name)=\(try body())")
            } catch {
                lines.append("\(name)=error: \(error)")
            }
        }
        record("persisted") { text(try state.value(forKey: "persist")) }
        record("put") {
            try state.setValue(Array("run".utf8), forKey: "persist")
            for (key, value) in [("a/1", "one"), ("a/2", "two"), ("b/1", "other"), ("a/3", "")] {
                try state.setValue(Array(value.utf8), forKey: key)
            }
            return "ok"
        }
        record("get") { text(try state.value(forKey: "a/1")) }
        record("missing") { text(try state.value(forKey: "nothing")) }
        record("scan") { try state.values(withPrefix: "a/").map { "\($0.key):\(text($0.value))" }.joined(separator: ",") }
        record("delete") {
            try state.removeValue(forKey: "a/1")
            try state.removeValue(forKey: "never-there")
            return text(try state.value(forKey: "a/1"))
        }
        record("long_key") {
            try state.setValue([1], forKey: String(repeating: "k", count: 1025))
            return "accepted"
        }
        record("long_value") {
            try state.setValue([UInt8](repeating: 7, count: 1024 * 1024 + 1), forKey: "big")
            return "accepted"
        }
        record("largest_value") {
            try state.setValue([UInt8](repeating: 7, count: 1024 * 1024), forKey: "big")
            return "\(try state.value(forKey: "big")?.count ?? -1)"
        }
        lines.append("done")
        try? (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}

/// `hold_check`: asks for one hold twice and another once, releases in turn, and writes what
/// the host answered in order (without a shared store the router's own holds answer).
struct HoldCheck {
    let context: PluginContext

    func run(writingTo path: String) {
        final class Events: Sendable {
            let lines = Mutex<[String]>([])
            @Sendable func note(_ line: String) { lines.withLock { $0.append(line) } }
        }
        let events = Events()
        let note = events.note
        do {
            let first = try context.hold("h") { note("first:\($0 ? "granted" : "lost")") }
            let second = try context.hold("h") { note("second:\($0 ? "granted" : "lost")") }
            let other = try context.hold("other") { note("other:\($0 ? "granted" : "lost")") }
            note("release")
            first.release()
            second.release()
            other.release()
        } catch {
            note("error:\(error)")
        }
        var lines = ["events=" + events.lines.withLock { $0 }.joined(separator: ",")]
        do {
            _ = try context.hold(String(repeating: "k", count: 1025)) { _ in }
            lines.append("long_name=accepted")
        } catch {
            lines.append("long_name=\(error)")
        }
        lines.append("done")
        try? (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}
