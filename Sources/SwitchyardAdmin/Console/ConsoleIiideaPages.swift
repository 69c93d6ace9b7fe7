import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SwitchyardConfig
import SwitchyardCore
import SwitchyardIiideas
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

/// The console's iiidea pages: the list, each iiidea's settings and test run, its run history
/// and the live feed of its runs, and the enable, disable, delete and preference changes.
///
/// It owns the catalog the pages read and change, and the preference forms its settings page
/// draws; separate from ``Console`` so the iiideas' pages keep their state to themselves.
struct ConsoleIiideaPages: Sendable {
    /// Runs per page of the run history.
    static let runsPerPage = 25
    /// The header a reconnecting `EventSource` sends with the id of the last event it had.
    static let lastEventID = HTTPField.Name("Last-Event-ID") ?? .cacheControl

    let catalog: IiideaCatalog
    let frame: ConsoleFrame
    let forms: ConsolePreferenceForms

    var router: SwitchyardRuntime.Router { catalog.router }
    var iiideas: RouterIiideas { catalog.iiideas }

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/iiideas") { request, _ -> Response in
            guard let session = frame.sessions.session(of: request) else { return frame.signIn(request) }
            let list = await catalog.summaries().map { summaryView($0) }
            return frame.page(
                title: "iiideas", template: "iiideas", data: ["iiideas": list], session: session, nav: "iiideas",
                notice: Console.notice(request))
        }
        routes.get("console/iiideas/:id") { request, context -> Response in
            guard let session = frame.sessions.session(of: request) else { return frame.signIn(request) }
            let id = try context.decodedParameter("id")
            guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                return frame.notFound(session, "No iiidea '\(id)'.")
            }
            return settingsPage(summary, session: session, notice: Console.notice(request))
        }
        routes.get("console/iiideas/:id/runs") { request, context -> Response in
            guard let session = frame.sessions.session(of: request) else { return frame.signIn(request) }
            let id = try context.decodedParameter("id")
            guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                return frame.notFound(session, "No iiidea '\(id)'.")
            }
            return runsPage(summary, request: request, session: session)
        }
        routes.get("console/events/runs") { request, _ -> Response in
            guard let id = Console.query(request)["iiidea"], iiideas.list.contains(where: { $0.iiidea.id == id }) else {
                return Response(status: .notFound)
            }
            return runEvents(request, iiidea: id)
        }
        for (verb, enabled) in [("enable", true), ("disable", false)] {
            routes.post("console/iiideas/:id/\(verb)") { request, context -> Response in
                let id = try context.decodedParameter("id")
                return try await frame.change(request) { session, _ in
                    do {
                        try await iiideas.setOnOwnThread(id, enabled: enabled)
                    } catch {
                        return frame.notFound(session, "No iiidea '\(id)'.")
                    }
                    return Console.redirect("/console/iiideas?done=\(verb)d&id=\(Console.queryEscaped(id))")
                }
            }
        }
        routes.post("console/iiideas/:id/delete") { request, context -> Response in
            let id = try context.decodedParameter("id")
            return try await frame.change(request) { session, _ in
                do throws(IiideaCatalog.Refusal) {
                    try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in try catalog.delete(id) }
                } catch {
                    return frame.page(
                        title: "iiideas", template: "iiideas", data: ["iiideas": await catalog.summaries().map { summaryView($0) }],
                        session: session, nav: "iiideas", problem: error.description, status: Console.status(of: error))
                }
                return Console.redirect("/console/iiideas?done=deleted&id=\(Console.queryEscaped(id))")
            }
        }
        routes.post("console/iiideas/:id/preferences") { request, context -> Response in
            let id = try context.decodedParameter("id")
            return try await frame.change(request) { session, form in
                guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                    return frame.notFound(session, "No iiidea '\(id)'.")
                }
                do throws(IiideaCatalog.Refusal) {
                    let preferences = try forms.read(form, of: summary.declaration)
                    try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in
                        try catalog.setPreferences(of: id, to: preferences)
                    }
                    return Console.redirect("/console/iiideas/\(Console.queryEscaped(id))?done=saved")
                } catch {
                    return settingsPage(summary, session: session, posted: form, refusal: error)
                }
            }
        }
        routes.post("console/iiideas/:id/preferences/reset") { request, context -> Response in
            let id = try context.decodedParameter("id")
            return try await frame.change(request) { session, _ in
                do throws(IiideaCatalog.Refusal) {
                    try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in
                        try catalog.setPreferences(of: id, to: PiecePreferences(), reset: true)
                    }
                } catch {
                    return frame.notFound(session, error.description)
                }
                return Console.redirect("/console/iiideas/\(Console.queryEscaped(id))?done=reset")
            }
        }
        routes.post("console/iiideas/:id/run") { request, context -> Response in
            let id = try context.decodedParameter("id")
            return try await frame.change(request) { session, form in
                guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                    return frame.notFound(session, "No iiidea '\(id)'.")
                }
                guard let input = try? JSONValue(parsing: Array((form["input"] ?? "{}").utf8)) else {
                    return settingsPage(summary, session: session, posted: form, refusal: .invalid("The sample input is not JSON."))
                }
                do throws(RouterError) {
                    _ = try iiideas.run(id, input: input)
                } catch {
                    return settingsPage(summary, session: session, posted: form, refusal: .invalid(error.reason))
                }
                return Console.redirect("/console/iiideas/\(Console.queryEscaped(id))/runs?done=started")
            }
        }
    }

    // MARK: Views

    func summaryView(_ summary: IiideaSummary) -> [String: Any] {
        let declaration = summary.declaration
        var view: [String: Any] = [
            "id": summary.id, "display_title": declaration.title ?? summary.id, "trigger": declaration.trigger.value.description,
            "service": declaration.piece.value, "action": declaration.action.value.description,
            "file": declaration.location.file, "runs_last_hour": summary.runsLastHour,
            "toggle": summary.enabled ? "disable" : "enable", "toggle_label": summary.enabled ? "Disable" : "Enable",
            "overridden": declaration.hasPreferenceOverride,
        ]
        view["template"] = summary.template
        view["reason"] = summary.inactiveReason.map(Redaction.redact)
        (view["state"], view["state_class"]) =
            !summary.enabled ? ("disabled", "off") : summary.inactiveReason != nil ? ("inactive", "warn") : ("enabled", "on")
        view["last_run"] = summary.lastRun.map(runView)
        return view
    }

    func runView(_ run: IiideaRun) -> [String: Any] {
        var view: [String: Any] = [
            "run_id": run.id, "started": Console.time(run.startedAt), "started_iso": Clock.rfc3339(unixNanos: run.startedAt),
            "outcome": run.outcome.rawValue,
            "input": Redaction.redact(Console.pretty(run.input)), "output": Redaction.redact(Console.pretty(run.output)),
        ]
        view["duration"] = run.endedAt.map { Console.duration($0 - run.startedAt) } ?? "—"
        view["error"] = run.error.map(Redaction.redact)
        view["piece"] = run.error == nil ? nil : run.endedPiece?.rawValue
        return view
    }

    private func settingsPage(
        _ summary: IiideaSummary, session: ConsoleSessions.Session, posted: [String: String]? = nil, refusal: IiideaCatalog.Refusal? = nil,
        notice: String? = nil
    ) -> Response {
        let declaration = summary.declaration
        var data = summaryView(summary)
        data.merge(forms.views(of: declaration, values: declaration.shownPreferences, posted: posted, errors: refusal?.fields ?? [:])) {
            _, new in new
        }
        data["read_only"] = summary.template == nil
        let lastInput = (try? iiideas.runStore?.runs(iiidea: summary.id, limit: 1))?.first?.input
        data["sample_input"] = posted?["input"] ?? lastInput.map { Console.pretty($0) } ?? "{}"
        return frame.page(
            title: declaration.title ?? summary.id, template: "iiidea", data: data, session: session, nav: "iiideas", notice: notice,
            problem: refusal?.description, status: refusal.map(Console.status) ?? .ok)
    }

    private func runsPage(_ summary: IiideaSummary, request: Request, session: ConsoleSessions.Session) -> Response {
        let query = request.uri.queryParameters
        let outcome = query.get("outcome").flatMap { IiideaRun.Outcome(rawValue: $0) }
        let pageNumber = max(0, min(query.get("page", as: Int.self) ?? 0, 10_000))
        // Taken before the query: the live feed replays from here what the page cannot show.
        let renderedAt = Clock.nowUnixNanos()
        let runs =
            (try? iiideas.runStore?.runs(
                iiidea: summary.id, outcome: outcome, limit: Self.runsPerPage + 1, offset: pageNumber * Self.runsPerPage))
            ?? []
        let base = "/console/iiideas/\(Console.queryEscaped(summary.id))/runs?outcome=\(outcome?.rawValue ?? "")&page="
        var data: [String: Any] = [
            "id": summary.id, "runs": runs.prefix(Self.runsPerPage).map(runView),
            "outcomes": [["value": "", "label": "All", "selected": outcome == nil]]
                + IiideaRun.Outcome.allCases.map { ["value": $0.rawValue, "label": $0.rawValue.capitalized, "selected": $0 == outcome] },
        ]
        data["filtered"] = outcome != nil
        data["newer"] = pageNumber > 0 ? base + String(pageNumber - 1) : nil
        data["older"] = runs.count > Self.runsPerPage ? base + String(pageNumber + 1) : nil
        // New runs stream in only where they belong: the first page, unfiltered.
        let live = pageNumber == 0 && outcome == nil
        data["live"] = live
        let source = "/console/events/runs?iiidea=\(Console.queryEscaped(summary.id))&since=\(renderedAt)"
        return frame.page(
            title: "Runs of \(summary.declaration.title ?? summary.id)", template: "runs", data: data, session: session, nav: "iiideas",
            notice: Console.notice(request), live: live ? ("runs", source) : nil)
    }

    /// Server-sent events: `event: run` with `{"run": ID, "html": "<tr…>"}` as each run of
    /// `iiidea` starts and ends; a heartbeat every 15 s.
    ///
    /// A run that starts or ends between the page's render and this stream's start would
    /// otherwise never reach the page, so the stream first replays the runs changed since the
    /// cursor: the browser's `Last-Event-ID` after a reconnect, else the page's `since`. Each
    /// event's id is the time the stream took it from the feed; a replayed row the page already
    /// has replaces itself.
    private func runEvents(_ request: Request, iiidea: String) -> Response {
        // Subscribed before the replay reads the store, so no change falls between the two.
        let feed = iiideas.runFeed.subscribe()
        let runs = iiideas.runStore
        let pages = self
        let cursor = request.headers[Self.lastEventID].flatMap { Int64($0) } ?? Console.query(request)["since"].flatMap { Int64($0) }
        return frame.eventStream(
            for: request, tick: .seconds(15),
            source: { output in
                if let cursor, let recent = try? runs?.runs(iiidea: iiidea, limit: Self.runsPerPage) {
                    let changed = recent.filter { Self.changed($0, since: cursor) }
                    for run in changed.reversed() { output.yield(pages.runEvent(run, id: Clock.nowUnixNanos())) }
                }
                for await event in feed where event.iiidea == iiidea {
                    let taken = Clock.nowUnixNanos()
                    guard let run = try? runs?.run(id: event.run) else { continue }
                    output.yield(pages.runEvent(run, id: taken))
                }
            })
    }

    /// Whether `run` may have started or ended after `cursor`, with a second's margin for
    /// the clock readings of the run's thread and the stream's.
    private static func changed(_ run: IiideaRun, since cursor: Int64) -> Bool {
        let from = max(cursor, 0) - 1_000_000_000
        guard let endedAt = run.endedAt else { return true }
        return run.startedAt >= from || endedAt >= from
    }

    private func runEvent(_ run: IiideaRun, id: Int64) -> String {
        let html = ConsoleTemplates.library.render(runView(run), withTemplate: "run_row") ?? ""
        return "id: \(id)\nevent: run\ndata: \(JSONValue.object(["run": .string(run.id), "html": .string(html)]).serialized())\n\n"
    }
}
