import Foundation
import Testing

@testable import IntegrationSupport

/// The iiidea store through the binary: templates, obtaining and deleting iiideas, preference
/// overrides and their schemas, stored iiideas that no longer validate, run now, and the run
/// history's outcome filter, all through `switchyard iiidea` and across restarts.
@Suite(.timeLimit(.minutes(3)))
struct IiideaStoreTests {
    private static func start(_ sandbox: Sandbox) async throws -> (RouterProcess, String) {
        try await RouterProcess.startWithAdmin(sandbox, extra: ["--spool", sandbox.path("state.db")])
    }

    /// Runs `switchyard iiidea ARGS --admin ADDRESS` and returns its output; fails the test on a
    /// non-zero exit.
    private static func cli(_ arguments: [String], admin: String, in sandbox: Sandbox, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> String
    {
        let result = try RouterProcess.runToExit(["iiidea"] + arguments + ["--admin", admin], in: sandbox.root)
        #expect(result.status == 0, "\(arguments): \(result.errors)", sourceLocation: sourceLocation)
        return result.output
    }

    /// Runs `switchyard iiidea ARGS --admin ADDRESS` expecting it to fail; returns its standard error.
    private static func refused(
        _ arguments: [String], admin: String, in sandbox: Sandbox, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        let result = try RouterProcess.runToExit(["iiidea"] + arguments + ["--admin", admin], in: sandbox.root)
        #expect(result.status == 1, "\(arguments) should fail: \(result.output)", sourceLocation: sourceLocation)
        return result.errors
    }

    private static func json(_ text: String) -> Any? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) }

    /// The ids `iiidea list` shows.
    private static func ids(admin: String, in sandbox: Sandbox) throws -> [String] {
        try cli(["list"], admin: admin, in: sandbox).split(separator: "\n").map { String($0.prefix { $0 != "\t" }) }
    }

    private static func runs(_ id: String, _ extra: [String] = [], admin: String, in sandbox: Sandbox) throws -> [[String: Any]] {
        (json(try cli(["runs", id, "--json", "--limit", "100"] + extra, admin: admin, in: sandbox)) as? [[String: Any]]) ?? []
    }

    /// The `text` fields of the lines of a `format: body` file.
    private static func texts(_ sandbox: Sandbox, _ file: String = "out.jsonl") -> [String] {
        sandbox.lines(of: file).compactMap { (json($0) as? [String: Any])?["text"] as? String }
    }

    @Test func anIiideaObtainedFromATemplateRunsSurvivesRestartsAndIsGoneWhenDeleted() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 100ms } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiidea_templates:
              - id: note-ticks
                title: Notes every tick
                description: Writes a note for every tick of the clock
                tags: [clock, notes]
                trigger: { port: clock.tick }
                service: { piece: template, preferences: { text: "tick {{body.count}}" } }
                action:  { port: out.write }
            """
        )
        var (router, admin) = try await Self.start(sandbox)
        #expect(
            try Self.cli(["templates"], admin: admin, in: sandbox)
                == "note-ticks\tclock,notes\tNotes every tick\tWrites a note for every tick of the clock\n")
        #expect(try Self.cli(["templates", "NOTES clock"], admin: admin, in: sandbox).hasPrefix("note-ticks\t"))
        #expect(try Self.cli(["templates", "weather"], admin: admin, in: sandbox) == "")
        #expect(try Self.ids(admin: admin, in: sandbox).isEmpty, "a template alone runs nothing")

        let obtained = try Self.cli(
            ["obtain", "note-ticks", "--id", "mine", "--title", "My notes", "--set", "service.text=mine {{body.count}}"], admin: admin,
            in: sandbox)
        #expect(obtained == "obtained mine\n")
        #expect(
            try Self.cli(["list"], admin: admin, in: sandbox) == "mine\tenabled\tclock.tick\ttemplate\tout.write\tMy notes\n")
        await router.waitUntil("the obtained iiidea's actions") { Self.texts(sandbox).count >= 2 }
        #expect(Self.texts(sandbox).allSatisfy { $0.hasPrefix("mine ") }, "\(Self.texts(sandbox))")
        // Without --id the template's id is taken, then -2.
        #expect(try Self.cli(["obtain", "note-ticks"], admin: admin, in: sandbox) == "obtained note-ticks\n")
        #expect(try Self.cli(["obtain", "note-ticks"], admin: admin, in: sandbox) == "obtained note-ticks-2\n")
        let taken = try Self.refused(["obtain", "note-ticks", "--id", "mine"], admin: admin, in: sandbox)
        #expect(taken.contains("an iiidea 'mine' exists already"), "\(taken)")
        let noFile = try Self.refused(["preferences", "note-ticks-2", "--reset"], admin: admin, in: sandbox)
        #expect(noFile.contains("there is no route file's to go back to"), "\(noFile)")
        #expect(try Self.cli(["delete", "note-ticks-2"], admin: admin, in: sandbox) == "deleted note-ticks-2\n")
        #expect(router.stop() == 0)

        (router, admin) = try await Self.start(sandbox)
        #expect(try Self.ids(admin: admin, in: sandbox) == ["mine", "note-ticks"], "both survive the restart; the deleted one does not")
        let mineAtRestart = Self.texts(sandbox).filter { $0.hasPrefix("mine ") }.count
        await router.waitUntil("its actions after the restart") {
            Self.texts(sandbox).filter { $0.hasPrefix("mine ") }.count >= mineAtRestart + 2
        }
        #expect(try Self.cli(["delete", "mine"], admin: admin, in: sandbox) == "deleted mine\n")
        #expect(try Self.ids(admin: admin, in: sandbox) == ["note-ticks"])
        let mineAtDelete = Self.texts(sandbox).filter { $0.hasPrefix("mine ") }.count
        let allAtDelete = Self.texts(sandbox).count
        await router.waitUntil("ten more actions of the other") { Self.texts(sandbox).count >= allAtDelete + 10 }
        // At most the run already under way when it was deleted.
        #expect(Self.texts(sandbox).filter { $0.hasPrefix("mine ") }.count <= mineAtDelete + 1)
        #expect(router.stop() == 0)

        (router, admin) = try await Self.start(sandbox)
        #expect(try Self.ids(admin: admin, in: sandbox) == ["note-ticks"], "the deleted iiidea stays gone")
        #expect(try Self.refused(["delete", "mine"], admin: admin, in: sandbox).contains("no iiidea 'mine'"))
        #expect(
            try Self.refused(["obtain", "nothing-like-it"], admin: admin, in: sandbox).contains("no iiidea template 'nothing-like-it'"))
        #expect(router.stop() == 0)
    }

    @Test func preferencesThatDoNotFitThePiecesSchemasAreRefusedByFieldAndNothingIsStored() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1h } }
              sink:  { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))" } }
            iiidea_templates:
              - id: collect-notes
                trigger: { port: clock.tick }
                service: { piece: template, preferences: { text: "t {{body.count}}" } }
                action:  { port: sink.collect, preferences: { level: low } }
            """
        )
        var (router, admin) = try await Self.start(sandbox)
        // The schemas the template shows: the built-in template piece's and testkit's collect port's.
        let templates = try #require(Self.json(try Self.cli(["templates", "--json"], admin: admin, in: sandbox)) as? [[String: Any]])
        let schemas = try #require(templates.first?["schemas"] as? [String: Any])
        let level = ((schemas["action"] as? [String: Any])?["properties"] as? [String: Any])?["level"] as? [String: Any]
        #expect(level?["enum"] as? [String] == ["low", "high"])
        #expect(level?["default"] as? String == "low")
        #expect(((schemas["service"] as? [String: Any])?["required"] as? [String]) == ["text"])

        let badLevel = try Self.refused(["obtain", "collect-notes", "--set", "action.level=loud"], admin: admin, in: sandbox)
        #expect(badLevel.contains("action.level"), "\(badLevel)")
        #expect(badLevel.contains(#""low", "high""#), "\(badLevel)")
        let badType = try Self.refused(
            ["obtain", "collect-notes", "--id", "typed", "--set", "service.text=5", "--set", "service.colour=red"], admin: admin,
            in: sandbox)
        #expect(badType.contains("service.text: expected string, found"), "\(badType)")
        #expect(badType.contains("service.colour: is not a known field"), "\(badType)")
        #expect(try Self.refused(["obtain", "collect-notes", "--id", "bad id"], admin: admin, in: sandbox).contains("letters, digits"))
        let badSet = try RouterProcess.runToExit(
            ["iiidea", "obtain", "collect-notes", "--set", "level=high", "--admin", admin], in: sandbox.root)
        #expect(badSet.status != 0 && badSet.errors.contains("service.KEY=VALUE"), "\(badSet.errors)")
        #expect(try Self.ids(admin: admin, in: sandbox).isEmpty)
        // A value that fits: the select's other choice.
        #expect(
            try Self.cli(["obtain", "collect-notes", "--set", "action.level=high"], admin: admin, in: sandbox) == "obtained collect-notes\n"
        )
        #expect(router.stop() == 0)

        (router, admin) = try await Self.start(sandbox)
        #expect(try Self.ids(admin: admin, in: sandbox) == ["collect-notes"], "only the valid one was stored")
        let shown = try #require(Self.json(try Self.cli(["preferences", "collect-notes"], admin: admin, in: sandbox)) as? [String: Any])
        #expect(((shown["preferences"] as? [String: Any])?["action"] as? [String: Any])?["level"] as? String == "high")
        let badChange = try Self.refused(["preferences", "collect-notes", "--set", "action.level=3"], admin: admin, in: sandbox)
        #expect(badChange.contains("action.level"), "\(badChange)")
        // A piece sent as null keeps its preferences (GET shows a piece without any as null).
        let put = try HTTPExchange.send(
            "http://\(admin)/v1/iiideas/collect-notes/preferences", method: "PUT", body: #"{"service": null, "action": {"level": "low"}}"#)
        #expect(put.status == 200, "\(put.body)")
        let kept = try #require(Self.json(try Self.cli(["preferences", "collect-notes"], admin: admin, in: sandbox)) as? [String: Any])
        #expect(((kept["preferences"] as? [String: Any])?["service"] as? [String: Any])?["text"] as? String == "t {{body.count}}")
        let obtainedWithNulls = try HTTPExchange.send(
            "http://\(admin)/v1/iiideas", method: "POST",
            body: #"{"template": "collect-notes", "id": "nulls", "preferences": {"service": null, "action": null}}"#)
        #expect(obtainedWithNulls.status == 201, "\(obtainedWithNulls.body)")
        let after = try #require(Self.json(try Self.cli(["preferences", "nulls"], admin: admin, in: sandbox)) as? [String: Any])
        #expect(((after["preferences"] as? [String: Any])?["service"] as? [String: Any])?["text"] as? String == "t {{body.count}}")
        #expect(router.stop() == 0)
    }

    @Test func aRouteFileIiideasPreferencesCanBeOverriddenAcrossRestartsAndReset() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 100ms } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiideas:
              - id: greet
                trigger: { port: clock.tick }
                service: { piece: template, preferences: { text: "file {{body.count}}" } }
                action:  { port: out.write }
            """
        )
        var (router, admin) = try await Self.start(sandbox)
        await router.waitUntil("the file's text") { Self.texts(sandbox).contains { $0.hasPrefix("file ") } }
        #expect(
            try Self.cli(["preferences", "greet", "--set", "service.text=store {{body.count}}"], admin: admin, in: sandbox)
                == "set the preferences of greet\n")
        var mark = Self.texts(sandbox).count
        await router.waitUntil("the chosen text") { Self.texts(sandbox).dropFirst(mark).contains { $0.hasPrefix("store ") } }
        let list = try #require(Self.json(try Self.cli(["list", "--json"], admin: admin, in: sandbox)) as? [[String: Any]])
        #expect(list.first?["preferences_overridden"] as? Bool == true)
        #expect(list.first?["origin"] as? String == "route_file")
        let shown = try #require(Self.json(try Self.cli(["preferences", "greet"], admin: admin, in: sandbox)) as? [String: Any])
        #expect(((shown["preferences"] as? [String: Any])?["service"] as? [String: Any])?["text"] as? String == "store {{body.count}}")
        let deleted = try Self.refused(["delete", "greet"], admin: admin, in: sandbox)
        #expect(deleted.contains("remove it there"), "a route-file iiidea is not deleted from the store: \(deleted)")
        #expect(router.stop() == 0)

        (router, admin) = try await Self.start(sandbox)
        mark = Self.texts(sandbox).count
        await router.waitUntil("three runs after the restart") { Self.texts(sandbox).count >= mark + 3 }
        #expect(Self.texts(sandbox).dropFirst(mark).allSatisfy { $0.hasPrefix("store ") }, "the override survives the restart")
        #expect(try Self.cli(["preferences", "greet", "--reset"], admin: admin, in: sandbox) == "reset the preferences of greet\n")
        mark = Self.texts(sandbox).count
        await router.waitUntil("the file's text again") { Self.texts(sandbox).dropFirst(mark).contains { $0.hasPrefix("file ") } }
        let after = try #require(Self.json(try Self.cli(["list", "--json"], admin: admin, in: sandbox)) as? [[String: Any]])
        #expect(after.first?["preferences_overridden"] == nil)
        #expect(router.stop() == 0)

        (router, admin) = try await Self.start(sandbox)
        mark = Self.texts(sandbox).count
        await router.waitUntil("three runs after the second restart") { Self.texts(sandbox).count >= mark + 3 }
        #expect(Self.texts(sandbox).dropFirst(mark).allSatisfy { $0.hasPrefix("file ") }, "the reset survives the restart")
        #expect(router.stop() == 0)
    }

    @Test func aStoredIiideaWhoseTemplateIsGoneIsLeftOutAndTheRouterRunsTheRest() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        func routes(withTemplate: Bool) -> String {
            let template = """
                  - { id: passing, trigger: { port: clock.tick }, service: { piece: template, preferences: { text: "passing {{body.count}}" } }, action: { port: out.write } }
                """
            return """
                instances:
                  clock: { plugin: core, timer: { interval: 100ms } }
                  out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
                iiideas:
                  - id: stays
                    trigger: { port: clock.tick }
                    service: { piece: template, preferences: { text: "stays {{body.count}}" } }
                    action:  { port: out.write }
                iiidea_templates:\(withTemplate ? "\n" + template : " []")
                """
        }
        try sandbox.writeRoutes(routes(withTemplate: true))
        var (router, admin) = try await Self.start(sandbox)
        #expect(try Self.cli(["obtain", "passing", "--id", "gone-soon"], admin: admin, in: sandbox) == "obtained gone-soon\n")
        await router.waitUntil("the obtained iiidea's runs") { Self.texts(sandbox).contains { $0.hasPrefix("passing ") } }
        #expect(router.stop() == 0)

        try sandbox.writeRoutes(routes(withTemplate: false))
        (router, admin) = try await Self.start(sandbox)
        let mark = Self.texts(sandbox).count
        await router.waitUntil("the route file's iiidea runs") { Self.texts(sandbox).count >= mark + 3 }
        #expect(Self.texts(sandbox).dropFirst(mark).allSatisfy { $0.hasPrefix("stays ") })
        #expect(try Self.ids(admin: admin, in: sandbox) == ["stays"])
        let log = router.standardError
        #expect(log.contains("stored iiidea left out"), "\(log)")
        #expect(log.contains("gone-soon") && log.contains("its template 'passing' is no longer in the route files"), "\(log)")
        #expect(router.stop() == 0)

        // Left out, not forgotten: with its template back it runs again.
        try sandbox.writeRoutes(routes(withTemplate: true))
        (router, admin) = try await Self.start(sandbox)
        #expect(try Self.ids(admin: admin, in: sandbox) == ["stays", "gone-soon"])
        #expect(!router.standardError.contains("stored iiidea left out"))
        #expect(router.stop() == 0)
    }

    @Test func aStoredIiideaThatNoLongerFitsItsChangedTemplateIsLeftOutAndTheOthersRun() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        func routes(passing service: String) -> String {
            """
            instances:
              clock: { plugin: core, timer: { interval: 100ms } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiidea_templates:
              - { id: passing, trigger: { port: clock.tick }, service: \(service), action: { port: out.write } }
              - id: steady
                trigger: { port: clock.tick }
                service: { piece: template, preferences: { text: "steady {{body.count}}" } }
                action:  { port: out.write }
            """
        }
        try sandbox.writeRoutes(routes(passing: #"{ piece: template, preferences: { text: "passing {{body.count}}" } }"#))
        var (router, admin) = try await Self.start(sandbox)
        // A piece set when obtaining is the person's; one left alone follows its template.
        #expect(
            try Self.cli(["obtain", "passing", "--id", "changed", "--set", "service.text=mine {{body.count}}"], admin: admin, in: sandbox)
                == "obtained changed\n")
        #expect(try Self.cli(["obtain", "steady"], admin: admin, in: sandbox) == "obtained steady\n")
        #expect(router.stop() == 0)

        // The template's service becomes a delay: the person's preferences ({text}) no longer fit,
        // and the problem is reported at the template's piece in the route file.
        try sandbox.writeRoutes(routes(passing: "{ piece: delay, preferences: { duration: 10ms } }"))
        (router, admin) = try await Self.start(sandbox)
        #expect(try Self.ids(admin: admin, in: sandbox) == ["steady"], "the stored iiidea that still validates runs")
        let mark = Self.texts(sandbox).count
        await router.waitUntil("the other stored iiidea runs") { Self.texts(sandbox).dropFirst(mark).contains { $0.hasPrefix("steady ") } }
        let log = router.standardError
        #expect(log.contains("stored iiidea left out") && log.contains("changed"), "\(log)")
        #expect(log.contains("needs preferences.duration"), "\(log)")
        #expect(router.stop() == 0)
    }

    @Test func theSIPSendPortTakesItsDestinationAndContentTypeFromCheckedActionPreferences() async throws {
        let peer = try SIPScriptedPeer { request, _ in SIPScriptedPeer.response(to: request, "200 OK") }
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1h } }
              pager: { plugin: sip, identity: { impu: "sip:alice@example.test" }, listen: { host: 127.0.0.1, port: 0 } }
            iiidea_templates:
              - id: page
                trigger: { port: clock.tick }
                service: { piece: template, preferences: { text: "page {{body.count}}" } }
                action:  { port: pager.send, preferences: { to: "sip:nobody@127.0.0.1:9" } }
            """)
        let (router, admin) = try await Self.start(sandbox)
        let templates = try #require(Self.json(try Self.cli(["templates", "--json"], admin: admin, in: sandbox)) as? [[String: Any]])
        let action = try #require((templates.first?["schemas"] as? [String: Any])?["action"] as? [String: Any])
        #expect(Set(((action["properties"] as? [String: Any]) ?? [:]).keys) == ["to", "content_type"], "\(action)")
        let wrong = try Self.refused(
            ["obtain", "page", "--set", "action.to=5", "--set", "action.subject=hi"], admin: admin, in: sandbox)
        #expect(wrong.contains("action.to: expected string"), "\(wrong)")
        #expect(wrong.contains("action.subject: is not a known field"), "\(wrong)")
        let bob = "sip:bob@127.0.0.1:\(peer.port)"
        #expect(
            try Self.cli(
                ["obtain", "page", "--set", "action.to=\(bob)", "--set", "action.content_type=text/x-iiidea"], admin: admin, in: sandbox)
                == "obtained page\n")
        _ = try Self.cli(["run", "page", "--input", #"{"count": 4, "time": "2026-11-25T00:00:00Z"}"#], admin: admin, in: sandbox)
        let requests = peer.waitForRequests(1)
        let message = try #require(requests.first { $0.hasPrefix("MESSAGE ") }, "\(requests)")
        #expect(message.hasPrefix("MESSAGE \(bob) SIP/2.0"), "\(message)")
        #expect(SIPScriptedPeer.header("Content-Type", in: message) == "text/x-iiidea")
        #expect(message.hasSuffix(#"{"text":"page 4"}"#), "\(message)")
        #expect(router.stop() == 0)
    }

    @Test func runNowRunsWithTheGivenInputEvenWhenTheConditionWouldFilterIt() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 1h } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiideas:
              - id: manual
                trigger: { port: clock.tick, when: "body.count > 1000000" }
                service: { piece: template, preferences: { text: "manual {{body.count}}" } }
                action:  { port: out.write }
              - id: off
                enabled: false
                trigger: { port: clock.tick }
                service: { piece: pass }
                action:  { port: out.write }
            """
        )
        let (router, admin) = try await Self.start(sandbox)
        let started = try Self.cli(
            ["run", "manual", "--input", #"{"count": 7, "time": "2026-11-25T00:00:00Z"}"#], admin: admin, in: sandbox)
        #expect(started.hasPrefix("started manual: trigger envelope "), "\(started)")
        let envelope = String(started.dropFirst("started manual: trigger envelope ".count).dropLast())
        await router.waitUntil("the action's output") { Self.texts(sandbox) == ["manual 7"] }
        var runs: [[String: Any]] = []
        await router.waitUntil("the run recorded as ended") {
            runs = ((try? Self.runs("manual", admin: admin, in: sandbox)) ?? []).filter { $0["ended_piece"] != nil }
            return runs.count == 1
        }
        let input = runs.first?["input"] as? [String: Any]
        #expect(input?["time"] as? String == "2026-11-25T00:00:00Z")
        #expect(input?["count"] as? Int == 7)
        #expect(runs.first?["trigger_envelope_id"] as? String == envelope)
        #expect(runs.first?["outcome"] as? String == "succeeded")
        #expect(try Self.refused(["run", "off"], admin: admin, in: sandbox).contains("disabled"))
        #expect(try Self.refused(["run", "nope"], admin: admin, in: sandbox).contains("iiidea 'nope': there is no iiidea with this id"))
        let badInput = try RouterProcess.runToExit(["iiidea", "run", "manual", "--input", "{not json", "--admin", admin], in: sandbox.root)
        #expect(badInput.status != 0 && badInput.errors.contains("--input must be JSON"), "\(badInput.errors)")
        // The sample stands for the trigger's output: it must be a core.Tick.
        let notATick = try Self.refused(["run", "manual", "--input", #"{"count": "seven"}"#], admin: admin, in: sandbox)
        #expect(notATick.contains("the sample input is not a core.Tick"), "\(notATick)")
        #expect(Self.texts(sandbox) == ["manual 7"])
        #expect(router.stop() == 0)
    }

    @Test func aPieceRefusingItsPreferencesLeavesTheObtainedIiideaInactiveUntilTheyChange() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 100ms } }
              sink:  { plugin: testkit, collect: { path: "\(sandbox.path("collected.txt"))" } }
            iiidea_templates:
              - id: collect
                trigger: { port: clock.tick }
                service: { piece: pass }
                action:  { port: sink.collect }
            """
        )
        let (router, admin) = try await Self.start(sandbox)
        let obtained = try Self.cli(["obtain", "collect", "--set", "action.refuse=no permission here"], admin: admin, in: sandbox)
        #expect(obtained == "obtained collect, but inactive: sink.collect refused: no permission here\n")
        #expect(
            try Self.cli(["list"], admin: admin, in: sandbox)
                == "collect\tinactive (sink.collect refused: no permission here)\tclock.tick\tpass\tsink.collect\t\n")
        #expect(try Self.runs("collect", admin: admin, in: sandbox).isEmpty)
        // New preferences: the piece is asked to enable with them, and accepts. It is not told
        // disable first: it never accepted the old ones.
        #expect(
            try Self.cli(
                ["preferences", "collect", "--set", "action.refuse=null", "--set", "action.level=high"], admin: admin, in: sandbox)
                == "set the preferences of collect\n")
        #expect(try Self.cli(["list"], admin: admin, in: sandbox) == "collect\tenabled\tclock.tick\tpass\tsink.collect\t\n")
        await router.waitUntil("runs once the piece accepts") { sandbox.lines(of: "collected.txt").count >= 3 }
        #expect(!router.standardError.contains("piece collect disabled for collect"))
        #expect(router.logged("piece collect enabled for collect"))
        #expect(router.stop() == 0)
    }

    @Test func theRunHistoryFiltersByOutcome() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("testkit")
        try sandbox.writeRoutes(
            """
            instances:
              kit:   { plugin: testkit, numbers: { count: 1, prefix: n, subjects: 1, state: "\(sandbox.path("numbers.state"))" } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiideas:
              # test.Number requires no field, so every sample input below is one; the number the
              # source emits itself is filtered out by the condition (run now skips it).
              - id: doubling
                trigger: { port: kit.numbers, when: "body.n > 1000000" }
                service: { piece: kit.double }
                action:  { port: out.write }
            """
        )
        let (router, admin) = try await Self.start(sandbox)
        // The double piece fails on an input without a count.
        for input in [#"{"count": 1}"#, "{}", #"{"count": 3}"#, #"{"other": 1}"#, #"{"count": 5}"#] {
            _ = try Self.cli(["run", "doubling", "--input", input], admin: admin, in: sandbox)
        }
        await router.waitUntil("five ended runs") {
            ((try? Self.runs("doubling", admin: admin, in: sandbox)) ?? []).filter { $0["ended_piece"] != nil }.count == 5
        }
        let failed = try Self.runs("doubling", ["--outcome", "failed"], admin: admin, in: sandbox)
        #expect(failed.count == 2, "\(failed)")
        #expect(failed.allSatisfy { $0["outcome"] as? String == "failed" && $0["error"] as? String == "input has no count" })
        let succeeded = try Self.runs("doubling", ["--outcome", "succeeded"], admin: admin, in: sandbox)
        #expect(succeeded.count == 3)
        #expect(succeeded.allSatisfy { $0["outcome"] as? String == "succeeded" && $0["error"] == nil })
        #expect(try Self.runs("doubling", ["--outcome", "running"], admin: admin, in: sandbox).isEmpty)
        // The API itself, with paging: newest first, so the second failed run is the first one (input {}).
        let page = try HTTPExchange.send("http://\(admin)/v1/iiideas/doubling/runs?outcome=failed&limit=1&offset=1")
        #expect(page.status == 200)
        let paged = try #require(Self.json(page.body) as? [[String: Any]])
        #expect(paged.count == 1)
        #expect((paged.first?["input"] as? [String: Any])?.isEmpty == true, "\(paged)")
        let all = try HTTPExchange.send("http://\(admin)/v1/runs?outcome=failed")
        #expect((Self.json(all.body) as? [[String: Any]])?.count == 2)
        #expect(Set(sandbox.lines(of: "out.jsonl")) == [#"{"doubled":2}"#, #"{"doubled":6}"#, #"{"doubled":10}"#])
        #expect(router.stop() == 0)
    }
}
