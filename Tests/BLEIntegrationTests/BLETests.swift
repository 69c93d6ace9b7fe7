import Foundation
import Testing

@testable import IntegrationSupport

/// The ble plugin through the router binary against the BlueZ double on a private bus: a press
/// runs an iiidea whose result is written to the display, a board without the service, a
/// dropped link, and the adapter switched off and on.
@Suite(.timeLimit(.minutes(2)))
struct BLETests {
    static func start(_ sandbox: Sandbox, double: BlueZDouble, extraRoutes: String = "") async throws -> (RouterProcess, String) {
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("ble")
        try sandbox.writeRoutes(
            """
            instances:
              slate:
                plugin: ble
                device: { address: "\(SlateBoard.address)" }
                service: "\(SlateBoard.service)"
                buttons: [ { characteristic: "\(SlateBoard.button1)", button: 1 }, { characteristic: "\(SlateBoard.button2)", button: 2 } ]
                press_kinds: { "1": short, "2": long }
                display: { characteristic: "\(SlateBoard.display)", write: request, max_length: 20 }
                reconnect: { initial_delay: 100ms, max_delay: 500ms }
              out: { plugin: core, file: { path: "\(sandbox.path("presses.jsonl"))" } }
            routes:
              - { from: slate.buttons, to: out.write }
            \(extraRoutes)
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(
            sandbox, extra: ["--spool", sandbox.path("state.db")], environment: ["DBUS_SYSTEM_BUS_ADDRESS": double.address])
        return (router, "http://" + admin)
    }

    /// The double with the board, a sandbox and the router started on it.
    final class Rig {
        let double: BlueZDouble
        let sandbox: Sandbox
        let router: RouterProcess
        let admin: String

        init(service: String = SlateBoard.service, extraRoutes: String = "", boardKnown: Bool = true, waitForConnection: Bool = true)
            async throws
        {
            double = try BlueZDouble()
            if boardKnown {
                try SlateBoard.add(to: double, service: service)
            } else {
                try double.control("org.bluez.Mock.AddAdapter", ["hci0", "switchyard"])
            }
            sandbox = try Sandbox()
            (router, admin) = try await BLETests.start(sandbox, double: double, extraRoutes: extraRoutes)
            if waitForConnection {
                await router.waitUntil("connected to the board") { router.occurrences(of: "connected to \(SlateBoard.address)") == 1 }
            }
        }

        deinit { double.stop() }
    }

    /// Waits until every iiidea a not-yet-connected board left inactive was asked again and
    /// accepted (the router asks once the instance reports itself ready).
    static func waitForActiveIiideas(_ router: RouterProcess) async {
        await router.waitUntil("the iiideas active") {
            router.occurrences(of: "iiidea waits for its pieces while the instances start")
                + router.occurrences(of: "iiidea inactive: a piece refused to enable")
                == router.occurrences(of: "iiidea active: its pieces accepted once slate was ready")
        }
    }

    /// The values written to the display so far, as text.
    static func written(_ double: BlueZDouble) throws -> [String] {
        let output = try double.control("org.bluez.Mock.Written", [SlateBoard.displayPath]).replacingOccurrences(of: "byte ", with: "")
        // gdbus prints ([[0x48, 0x69], [0x4f, 0x4b]],) ("byte " before the first value only):
        // every innermost bracket group is one write (an empty list is the outer one's "[]").
        let groups = try NSRegularExpression(pattern: #"\[([^\[\]]*)\]"#)
        return groups.matches(in: output, range: NSRange(output.startIndex..., in: output)).compactMap { match in
            Range(match.range(at: 1), in: output).map { range in
                let bytes = output[range].components(separatedBy: ", ").compactMap { UInt8($0.dropFirst(2), radix: 16) }
                return String(decoding: bytes, as: UTF8.self)
            }
        }.filter { !$0.isEmpty }
    }

    @Test func aPressRunsTheIiideaAndItsResultIsShownOnTheDisplay() async throws {
        let rig = try await Rig(
            extraRoutes: """
                iiideas:
                  - id: button-1
                    trigger: { port: slate.buttons, when: "body.button == 1" }
                    service: { piece: template, preferences: { text: "Button {{body.button}}: {{body.kind}} press, shown on the display" } }
                    action:  { port: slate.display }
                """)
        let (double, sandbox, router, admin) = (rig.double, rig.sandbox, rig.router, rig.admin)
        #expect(try HTTPExchange.send(admin + "/readyz").status == 200)
        await Self.waitForActiveIiideas(router)
        // A board that connects during the start-up grace is a healthy start: no warning.
        #expect(router.occurrences(of: "warning") == 0, "\(router.standardError)")
        #expect(try double.control("org.bluez.Mock.Notify", [SlateBoard.button1Path, "[1]"]).contains("true"))
        await router.waitUntil("the display written") { ((try? Self.written(double)) ?? []).count == 1 }
        // Cut to max_length (20 bytes) at a character boundary.
        #expect(try Self.written(double) == ["Button 1: short pres"])
        // The press file is written by a route of its own, not by the iiidea that wrote the display.
        await router.waitUntil("the press recorded") { sandbox.lines(of: "presses.jsonl").count == 1 }
        let presses = try sandbox.jsonLines(of: "presses.jsonl")
        let press = try #require(presses.first?["body"] as? [String: Any])
        #expect(press["device"] as? String == SlateBoard.address)
        #expect(press["button"] as? Int == 1)
        #expect(press["kind"] as? String == "short")
        #expect(press["raw"] as? String == "01")
        #expect(presses.first?["type"] as? String == "ble.ButtonPress")
        #expect(router.stop() == 0)
    }

    @Test func aBoardWithoutTheServiceFailsTheInstanceWithWhatIsMissing() async throws {
        let rig = try await Rig(service: "0000180f-0000-1000-8000-00805f9b34fb", waitForConnection: false)
        let (router, admin) = (rig.router, rig.admin)
        await router.waitUntil("the missing service reported") {
            router.standardError.contains(
                "\(SlateBoard.address) has no GATT service \(SlateBoard.service) (it offers: 0000180f-0000-1000-8000-00805f9b34fb); the instance stops trying"
            )
        }
        #expect(try HTTPExchange.send(admin + "/readyz").status == 503)
        #expect(try HTTPExchange.send(admin + "/healthz").status == 200, "the router stays up")
        #expect(router.stop() == 0)
    }

    @Test func aDroppedLinkReconnectsAndResubscribes() async throws {
        let rig = try await Rig()
        let (double, sandbox, router, admin) = (rig.double, rig.sandbox, rig.router, rig.admin)
        try double.control("org.bluez.Mock.DropLink", [SlateBoard.device])
        await router.waitUntil("the loss noticed") { router.occurrences(of: "lost the board") == 1 }
        await router.waitUntil("connected again") { router.occurrences(of: "connected to \(SlateBoard.address)") == 2 }
        #expect(try HTTPExchange.send(admin + "/readyz").status == 200)
        // Notifications flow again only because the plugin started them again.
        #expect(try double.control("org.bluez.Mock.Notify", [SlateBoard.button1Path, "[2]"]).contains("true"))
        await router.waitUntil("the press after reconnecting") { sandbox.lines(of: "presses.jsonl").count == 1 }
        #expect(((try sandbox.jsonLines(of: "presses.jsonl").first?["body"] as? [String: Any])?["kind"] as? String) == "long")
        #expect(router.stop() == 0)
    }

    @Test func aNotificationLongerThanAnAttributeIsRefusedAndCounted() async throws {
        let rig = try await Rig()
        let (double, sandbox, router, admin) = (rig.double, rig.sandbox, rig.router, rig.admin)
        let long = "[" + Array(repeating: "1", count: 600).joined(separator: ", ") + "]"
        #expect(try double.control("org.bluez.Mock.Notify", [SlateBoard.button1Path, long]).contains("true"))
        await router.waitUntil("the long notification refused") { router.occurrences(of: "a notification of 600 bytes") == 1 }
        #expect(try MetricsExposition.pluginMetric("presses_refused_total", instance: "slate", admin: admin) == 1)
        #expect(try double.control("org.bluez.Mock.Notify", [SlateBoard.button1Path, "[2]"]).contains("true"))
        await router.waitUntil("the next press delivered") { sandbox.lines(of: "presses.jsonl").count == 1 }
        #expect(router.stop() == 0)
    }

    @Test func anAdapterSwitchedOffIsWaitedForAndTheBoardReconnected() async throws {
        let rig = try await Rig()
        let (double, router, admin) = (rig.double, rig.router, rig.admin)
        try double.control("org.bluez.Mock.SetAdapterPowered", ["hci0", "false"])
        await router.waitUntil("waiting for the adapter") { router.occurrences(of: "adapter hci0 is powered off; waiting for it") >= 1 }
        #expect(try HTTPExchange.send(admin + "/readyz").status == 503)
        try double.control("org.bluez.Mock.SetAdapterPowered", ["hci0", "true"])
        await router.waitUntil("connected again") { router.occurrences(of: "connected to \(SlateBoard.address)") == 2 }
        #expect(try HTTPExchange.send(admin + "/readyz").status == 200)
        #expect(router.stop() == 0)
    }

    /// No bus at start (nothing listens at DBUS_SYSTEM_BUS_ADDRESS): the router starts, the
    /// instance is not ready and `/readyz` says why, a timer route delivers meanwhile; once the
    /// bus and BlueZ appear there, the instance connects and becomes ready.
    @Test func aMissingBusIsNotFatalAndTheInstanceConnectsWhenItAppears() async throws {
        let sandbox = try Sandbox()
        let busFolder = sandbox.root.appendingPathComponent("dbus")
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("ble")
        try sandbox.writeRoutes(
            """
            instances:
              slate:
                plugin: ble
                device: { address: "\(SlateBoard.address)" }
                service: "\(SlateBoard.service)"
                buttons: [ { characteristic: "\(SlateBoard.button1)", button: 1 } ]
                reconnect: { initial_delay: 100ms, max_delay: 400ms }
              clock: { plugin: core, timer: { interval: 100ms } }
              ticks: { plugin: core, file: { path: "\(sandbox.path("ticks.jsonl"))" } }
              presses: { plugin: core, file: { path: "\(sandbox.path("presses.jsonl"))" } }
            routes:
              - { from: clock.tick, to: ticks.write }
              - { from: slate.buttons, to: presses.write }
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(
            sandbox, environment: ["DBUS_SYSTEM_BUS_ADDRESS": BlueZDouble.address(in: busFolder)])
        await router.waitUntil("/readyz naming the instance and the missing bus") {
            let answer = try? HTTPExchange.send("http://\(admin)/readyz")
            return answer?.status == 503
                && answer?.body.contains("not ready: slate\nslate: no D-Bus system bus (DBUS_SYSTEM_BUS_ADDRESS=unix:path=") == true
        }
        await router.waitUntil("the timer route delivering meanwhile") { sandbox.lines(of: "ticks.jsonl").count >= 3 }
        await router.waitUntil("retried with backoff") { router.occurrences(of: "no D-Bus system bus") >= 3 }

        // The bus and BlueZ come up where the router looks, with the board.
        let double = try BlueZDouble(in: busFolder)
        try SlateBoard.add(to: double)
        await router.waitUntil("connected once the bus and BlueZ are there") {
            router.occurrences(of: "connected to \(SlateBoard.address)") == 1
        }
        await router.waitUntil("ready") { (try? HTTPExchange.send("http://\(admin)/readyz"))?.status == 200 }
        #expect(try double.control("org.bluez.Mock.Notify", [SlateBoard.button1Path, "[1]"]).contains("true"))
        await router.waitUntil("the press delivered") { sandbox.lines(of: "presses.jsonl").count == 1 }

        // The bus goes away while connected, and comes back.
        double.stop()
        await router.waitUntil("the lost bus noticed") { router.occurrences(of: "lost the D-Bus system bus") == 1 }
        #expect(try HTTPExchange.send("http://\(admin)/readyz").body.hasPrefix("not ready: slate\nslate: "))
        let again = try BlueZDouble(in: busFolder)
        defer { again.stop() }
        try SlateBoard.add(to: again)
        await router.waitUntil("connected again") { router.occurrences(of: "connected to \(SlateBoard.address)") == 2 }
        await router.waitUntil("ready again") { (try? HTTPExchange.send("http://\(admin)/readyz"))?.status == 200 }
        #expect(router.stop() == 0)
    }

    /// examples/slate-button as its README runs it without the board: button 1 → the display,
    /// button 2 → MQTT, MQTT → the display.
    @Test func theSlateButtonExampleRunsAgainstTheDouble() async throws {
        let double = try BlueZDouble()
        defer { double.stop() }
        try SlateBoard.add(to: double)
        let broker = try Mosquitto()
        let sandbox = try Sandbox()
        for plugin in ["core", "ble", "mqtt"] { try sandbox.installPlugin(plugin) }
        let example = BuildProducts.packageRoot.appendingPathComponent("examples/slate-button/routes.yaml")
        try sandbox.writeRoutes(
            try String(contentsOf: example, encoding: .utf8).replacingOccurrences(of: "mqtt://127.0.0.1:1883", with: broker.url))
        let router = try RouterProcess(
            ["run", sandbox.routes.path, "--plugins", sandbox.plugins.path], in: sandbox.root,
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": double.address])
        await router.waitUntil("connected to the board") { router.occurrences(of: "connected to \(SlateBoard.address)") == 1 }
        await Self.waitForActiveIiideas(router)
        broker.waitForLog("Sending SUBACK to slate-button")
        #expect(try double.control("org.bluez.Mock.Notify", [SlateBoard.button1Path, "[1]"]).contains("true"))
        await router.waitUntil("button 1 on the display") { ((try? Self.written(double)) ?? []).count == 1 }
        let shown = try Self.written(double)
        #expect(shown.first?.hasPrefix("short 20") == true, "\(shown)")
        #expect(try double.control("org.bluez.Mock.Notify", [SlateBoard.device + "/service0010/char0012", "[2]"]).contains("true"))
        broker.waitForLog("'slate/button2', ... (21 bytes))")
        try broker.publish(topic: "slate/display", message: "Hello", qos: 1)
        await router.waitUntil("the MQTT message on the display") { ((try? Self.written(double)) ?? []).count == 2 }
        #expect(try Self.written(double).last == "Hello")
        #expect(router.stop() == 0)
    }

    @Test func anUnknownBoardIsScannedForWithTheServiceAsDiscoveryFilter() async throws {
        let rig = try await Rig(boardKnown: false, waitForConnection: false)
        let (double, router) = (rig.double, rig.router)
        await router.waitUntil("the scan") {
            router.occurrences(of: "scanning for \(SlateBoard.address) with service \(SlateBoard.service)") == 1
        }
        let filter = try double.control("org.freedesktop.DBus.Mock.GetMethodCalls", path: "/org/bluez/hci0", ["SetDiscoveryFilter"])
        #expect(filter.contains("'UUIDs': <['\(SlateBoard.service)']>"), "\(filter)")
        #expect(filter.contains("'Transport': <'le'>"), "\(filter)")
        #expect(
            try double.control("org.freedesktop.DBus.Mock.GetMethodCalls", path: "/org/bluez/hci0", ["StartDiscovery"]).contains("[(uint64")
        )
        // The board comes into range: BlueZ announces it (InterfacesAdded) and the link connects.
        try SlateBoard.add(to: double, withAdapter: false)
        await router.waitUntil("connected to the board found by the scan") {
            router.occurrences(of: "connected to \(SlateBoard.address)") == 1
        }
        #expect(
            try double.control("org.freedesktop.DBus.Mock.GetMethodCalls", path: "/org/bluez/hci0", ["StopDiscovery"]).contains("[(uint64"))
        #expect(router.stop() == 0)
    }

    @Test func anIiideaOnABoardNotYetConnectedIsInactiveWithTheReasonUntilItConnects() async throws {
        let rig = try await Rig(
            extraRoutes: """
                iiideas:
                  - id: press-to-display
                    trigger: { port: slate.buttons }
                    service: { piece: pass }
                    action:  { port: slate.display }
                """, boardKnown: false, waitForConnection: false)
        let (double, router, admin) = (rig.double, rig.router, rig.admin)
        await router.waitUntil("the scan") { router.occurrences(of: "scanning for \(SlateBoard.address)") == 1 }
        let before = try HTTPExchange.send(admin + "/v1/iiideas")
        #expect(before.body.contains(#""active":false"#), "\(before.body)")
        // Not connected (or, this early, no bus link yet): either way it is asked again.
        #expect(before.body.contains("refused: ") && before.body.contains("it is asked again once"), "\(before.body)")
        // The board comes into range and connects: the router asks the pieces again.
        try SlateBoard.add(to: double, withAdapter: false)
        await router.waitUntil("connected") { router.occurrences(of: "connected to \(SlateBoard.address)") == 1 }
        await router.waitUntil("the iiidea active") {
            (try? HTTPExchange.send(admin + "/v1/iiideas").body.contains(#""active":true"#)) == true
        }
        // Activated first, logged after.
        await router.waitUntil("the log line") { router.standardError.contains("iiidea active: its pieces accepted once slate was ready") }
        #expect(router.stop() == 0)
    }
}
