import Foundation
import Testing

/// `@unchecked Sendable` is left to holders of C pointers and copy-on-write boxes: everything
/// else shared between threads is checked, by the compiler (a `Mutex` or `Locked` around the
/// state) or at run time (`NIOLoopBoundBox` asserts its event loop). Each one left is listed
/// here with its reason; a new one fails until it is written down (and, better, made checked).
struct UncheckedSendableTests {
    /// `file: type` → why it cannot be checked.
    static let allowed: [String: String] = [
        "Sources/SwitchyardCore/Concurrency/Locked.swift: Locked":
            "owns a pthread mutex and condition (C); its state is reached only with the mutex held",
        "Sources/SwitchyardCore/Envelope/Envelope.swift: Storage":
            "the envelope's copy-on-write box, mutated only while uniquely referenced",
        "Plugins/mqtt/Codec/MQTTProperties.swift: Storage": "the MQTT properties' copy-on-write box",
        "Sources/SwitchyardRouting/Expressions/Condition.swift: Pattern":
            "holds a standard-library Regex (a copy-on-write box of a compiled program, not declared Sendable), lowered before sharing",
        "Sources/SwitchyardSpool/Spool/Spool.swift: Spool": "one SQLite connection and its statements (C handles) behind its lock",
        "Sources/SwitchyardPluginKit/PluginContext.swift: PluginContext":
            "the host's table and the instance's context (C pointers the host keeps for the process)",
        "Sources/SwitchyardPluginKit/PluginExport.swift: Registration": "the host's pointers given at load (C)",
        "Sources/SwitchyardRuntime/Loading/HostContexts.swift: HostContextTable":
            "the slot arrays behind the generation-checked handles plugins hold (C memory, atomics)",
        "Sources/SwitchyardRuntime/Loading/LoadedPlugin.swift: PluginTable": "a plugin's C function table, immutable",
        "Sources/SwitchyardRuntime/Loading/HostTable.swift: Offer": "the host tables' process-lifetime C allocation",
        "Sources/SwitchyardRuntime/Router/PluginHolds.swift: Callback": "a plugin's C callback and its user pointer",
        "Plugins/ble/DBus/DBusConnection.swift: DBusConnection": "an sd-bus connection (C), used on its loop thread",
    ]

    /// Every `@unchecked Sendable` type under `Sources/` and `Plugins/`, as `file: type`.
    static func found() throws -> [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let declaration = try Regex(#"(?:class|struct|enum|actor)\s+(\w+)[^{\n]*@unchecked\s+Sendable"#)
        var found: [String] = []
        for top in ["Sources", "Plugins"] {
            guard let files = FileManager.default.enumerator(atPath: root.appendingPathComponent(top).path) else { continue }
            for case let relative as String in files where relative.hasSuffix(".swift") {
                let text = try String(contentsOf: root.appendingPathComponent(top).appendingPathComponent(relative), encoding: .utf8)
                for match in text.matches(of: declaration) {
                    if let name = match.output[1].substring { found.append("\(top)/\(relative): \(name)") }
                }
            }
        }
        return found.sorted()
    }

    @Test func onlyCPointerHoldersAndCopyOnWriteBoxesAreUnchecked() throws {
        let found = try Self.found()
        // The scan is real: it finds the lock every other type uses.
        #expect(found.contains("Sources/SwitchyardCore/Concurrency/Locked.swift: Locked"))
        let unlisted = found.filter { Self.allowed[$0] == nil }
        #expect(
            unlisted.isEmpty,
            "@unchecked Sendable without a listed reason (make it checked: Mutex, Locked or NIOLoopBoundBox): \(unlisted.joined(separator: "; "))"
        )
        // A type made checked leaves the list too, so the list stays the truth.
        let gone = Self.allowed.keys.filter { !found.contains($0) }.sorted()
        #expect(gone.isEmpty, "listed but no longer @unchecked, remove from the list: \(gone.joined(separator: "; "))")
        #expect(found.count <= 12, "\(found.count) @unchecked Sendable types; the house rule allows 12")
    }
}
