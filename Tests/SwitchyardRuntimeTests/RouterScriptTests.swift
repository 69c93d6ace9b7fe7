import Foundation
import SwitchyardABI
import SwitchyardConfig
import SwitchyardCore
import SwitchyardSpool
import SwitchyardStore
import Testing

@testable import SwitchyardRuntime

private func statistics(_ router: Router, _ name: String) -> RouterStatistics.Route? {
    router.statistics.routes.first { $0.name == name }
}

/// Routes with `script:` in a running router, with the fake plugin at both ends. Every test
/// uses its own instance names (the fake plugin keeps per-name state).
@Suite struct RouterScriptTests {
    @Test func aScriptReshapesSplitsDropsAndCountsEachEnvelope() async throws {
        let source = FakeInstance.register("scrSrc")
        let sink = FakeInstance.register("scrSnk")
        let yaml = """
            instances:
              scrSrc: { plugin: fake }
              scrSnk: { plugin: fake }
            routes:
              - name: shaped
                from: scrSrc.out
                script: |
                  local x = envelope.body.x
                  if x == 0 then return nil end
                  if x < 0 then
                    for i = 1, -x do emit { subject = "part/" .. i, body = { z = tostring(i) } } end
                    return
                  end
                  return { subject = "x/" .. x, type = "t.B", body = { z = string.format("%.1f", x * 1.5) } }
                to: scrSnk.any
            """
        try await withRouter(yaml) { router in
            #expect(source.emit(port: "out", Envelope(id: "in-1", type: "t.A", body: bodyA(x: 2))) == SY_OK)
            #expect(source.emit(port: "out", Envelope(id: "in-2", type: "t.A", body: bodyA(x: 0))) == SY_OK)
            #expect(source.emit(port: "out", Envelope(id: "in-3", type: "t.A", body: bodyA(x: -3))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == 4 })
            let delivered = sink.deliveries.map(\.envelope)
            #expect(delivered.map(\.subject) == ["x/2", "part/1", "part/2", "part/3"])
            #expect(delivered.map(\.id) == ["in-1", "in-3", "in-3.1", "in-3.2"])
            #expect(delivered[0].type == "t.B")
            #expect(delivered[0].decodedBody() == ["z": "3.0"])
            #expect(delivered[0].contentType == "application/json")
            #expect(delivered[1].type == "json", "a new body with no type named is the open json type")
            #expect(await waitUntil { statistics(router, "shaped")?[.scriptCalls] == 3 })
            let route = try #require(statistics(router, "shaped"))
            #expect(route.filtered == 1)
            #expect(route[.scriptErrors] == 0)
        }
    }

    @Test func aFailingScriptDropsOnlyThatEnvelopeAndTheRouterGoesOn() async throws {
        let source = FakeInstance.register("failSrc")
        let sink = FakeInstance.register("failSnk")
        let yaml = """
            instances:
              failSrc: { plugin: fake }
              failSnk: { plugin: fake }
            routes:
              - name: fragile
                from: failSrc.out
                script: |
                  if envelope.body.x == 1 then error("one is not allowed") end
                  if envelope.body.x == 2 then while true do end end
                  if envelope.body.x == 3 then local t = {} while true do t[#t + 1] = string.rep("m", 4096) end end
                  if envelope.body.x == 4 then return { nonsense = true } end
                  if envelope.body.x == 5 then return { type = "t.B", body = { z = 5 } } end
                  return envelope
                to: failSnk.any
            """
        try await withRouter(yaml) { router in
            for x in 1...6 { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
            #expect(await waitUntil { sink.deliveries.count == 1 })
            #expect(sink.deliveries.first?.envelope.decodedBody()["x"] == .int(6))
            #expect(await waitUntil { statistics(router, "fragile")?[.scriptCalls] == 6 })
            let route = try #require(statistics(router, "fragile"))
            #expect(route[.scriptErrors] == 3, "the error, the unknown field and the body that is not a t.B")
            #expect(route[.scriptBudgetStops] == 2, "the endless loop and the memory bomb")
        }
    }

    @Test func stateLastsFromOneEnvelopeToTheNext() async throws {
        let source = FakeInstance.register("stSrc")
        let sink = FakeInstance.register("stSnk")
        let yaml = """
            instances:
              stSrc: { plugin: fake }
              stSnk: { plugin: fake }
            routes:
              - name: counting
                from: stSrc.out
                script: |
                  state.count = (state.count or 0) + envelope.body.x
                  return { body = { x = state.count } }
                to: stSnk.any
            """
        try await withRouter(yaml) { _ in
            for x in [1, 2, 3] { #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: x))) == SY_OK) }
            #expect(await waitUntil { sink.deliveries.count == 3 })
            #expect(sink.deliveries.map { $0.envelope.decodedBody()["x"] } == [.int(1), .int(3), .int(6)])
        }
    }

    @Test func anAtLeastOnceRouteKeepsWhatTheScriptFailedOnAsADeadLetterThatAReplayRunsAgain() async throws {
        let folder = try TemporaryFolder()
        defer { withExtendedLifetime(folder) {} }
        let source = FakeInstance.register("dlSrc")
        let sink = FakeInstance.register("dlSnk")
        let yaml = """
            instances:
              dlSrc: { plugin: fake }
              dlSnk: { plugin: fake }
            routes:
              - name: durable
                from: dlSrc.out
                delivery: at-least-once
                script: |
                  if envelope.body.x == 13 and not state.fixed then state.fixed = true error("unlucky") end
                  return envelope
                to: dlSnk.any
            """
        let spool = try Spool(path: folder.path + "/spool.db", owner: true)
        let router = Router(plan: try plan(yaml), logger: quietLogger, spool: spool)
        try router.start()
        defer { router.shutdown(drainTimeout: .seconds(5)) }
        #expect(source.emit(port: "out", Envelope(id: "thirteen", type: "t.A", body: bodyA(x: 13))) == SY_OK)
        #expect(source.emit(port: "out", Envelope(id: "fourteen", type: "t.A", body: bodyA(x: 14))) == SY_OK)
        #expect(await waitUntil { sink.deliveries.count == 1 })
        #expect(await waitUntil { ((try? spool.deadLetters(route: "durable")) ?? []).count == 1 })
        let letter = try #require(try spool.deadLetters(route: "durable").first)
        #expect(letter.sink == "(script)")
        #expect(letter.error.contains("r.yaml:"), "the message names the route file's line: \(letter.error)")
        #expect(letter.error.contains("unlucky"))
        // The script now passes it (its state says so): the replay runs it again.
        #expect(try spool.replayDeadLetters(ids: nil) == 1)
        #expect(await waitUntil(timeout: .seconds(20)) { sink.deliveries.count == 2 })
        #expect(sink.deliveries.map(\.envelope.id) == ["fourteen", "thirteen"])
    }

    @Test func aPersistentStateOutlivesTheRouter() async throws {
        let folder = try TemporaryFolder()
        defer { withExtendedLifetime(folder) {} }
        let source = FakeInstance.register("psSrc")
        let sink = FakeInstance.register("psSnk")
        let yaml = """
            instances:
              psSrc: { plugin: fake }
              psSnk: { plugin: fake }
            routes:
              - name: total
                from: psSrc.out
                script:
                  state: persistent
                  source: |
                    state.sum = (state.sum or 0) + envelope.body.x
                    return { body = { x = state.sum } }
                to: psSnk.any
            """
        let spool = try Spool(path: folder.path + "/spool.db", owner: true)
        for (round, (input, expected)) in [(5, 5), (7, 12)].enumerated() {
            let router = Router(plan: try plan(yaml), logger: quietLogger, spool: spool)
            try router.start()
            #expect(source.emit(port: "out", Envelope(type: "t.A", body: bodyA(x: input))) == SY_OK)
            #expect(await waitUntil { sink.deliveries.count == round + 1 })
            router.shutdown(drainTimeout: .seconds(5))
            #expect(sink.deliveries.last?.envelope.decodedBody()["x"] == .int(expected), "round \(round + 1)")
        }
        #expect(try spool.store.stateValue(of: "route total", key: Array("script.state".utf8)) == Array(#"{"sum":12}"#.utf8))
    }

    @Test func aSyntaxErrorIsReportedAtTheRouteFilesLine() throws {
        let yaml = """
            instances:
              synSrc: { plugin: fake }
              synSnk: { plugin: fake }
            routes:
              - name: broken
                from: synSrc.out
                script: |
                  local x = 1
                  if x then
                    return envelope
                to: synSnk.any
            """
        let (plan, problems) = try validated(yaml, file: "syn.yaml")
        #expect(plan == nil)
        let problem = try #require(problems.first)
        #expect(problem.message.contains("Lua syntax error"), "\(problem)")
        #expect(problem.location?.file == "syn.yaml")
        // The script's third line (the end of the chunk, where 'end' is missing) is the file's tenth.
        #expect(problem.location?.line == 10, "\(problem)")
        #expect(problem.location?.column == 7, "at the block's indentation: \(problem)")
    }

    @Test func aRouteHasAtMostOneOfMapTemplateAndScript() throws {
        let yaml = """
            instances:
              oneSrc: { plugin: fake }
              oneSnk: { plugin: fake }
            routes:
              - from: oneSrc.out
                map: { z: "{{body.y}}" }
                script: "return envelope"
                to: oneSnk.any
            """
        let (_, problems) = ConfigLoader(environment: [:]).load(sources: [(file: "one.yaml", text: yaml)])
        #expect(problems.contains { $0.message.contains("at most one of 'map', 'template' and 'script'") }, "\(problems)")
    }
}

/// A folder of its own under the system's temporary folder, removed with its contents when
/// the value is released.
final class TemporaryFolder {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("switchyard-script-\(ULID.next())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
