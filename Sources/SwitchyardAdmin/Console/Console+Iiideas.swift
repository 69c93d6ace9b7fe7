import Foundation
import Hummingbird
import NIOCore
import SwitchyardConfig
import SwitchyardCore
import SwitchyardRuntime
import SwitchyardSpool
import SwitchyardStore

extension Console {
    /// Runs per page of the run history.
    static let runsPerPage = 25

    func addIiideaPages(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/iiideas") { request, _ -> Response in
            guard let session = sessions.session(of: request) else { return signIn(request) }
            let list = await catalog.summaries().map { summaryView($0) }
            return page(
                title: "iiideas", template: "iiideas", data: ["iiideas": list], session: session, nav: "iiideas",
                notice: Self.notice(request))
        }
        routes.get("console/iiideas/:id") { request, context -> Response in
            guard let session = sessions.session(of: request) else { return signIn(request) }
            let id = try context.decodedParameter("id")
            guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                return notFound(session, "No iiidea '\(id)'.")
            }
            return settingsPage(summary, session: session, notice: Self.notice(request))
        }
        routes.get("console/iiideas/:id/runs") { request, context -> Response in
            guard let session = sessions.session(of: request) else { return signIn(request) }
            let id = try context.decodedParameter("id")
            guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                return notFound(session, "No iiidea '\(id)'.")
            }
            return runsPage(summary, request: request, session: session)
        }
        routes.get("console/events/runs") { request, _ -> Response in
            guard let id = Self.query(request)["iiidea"], router.iiideas.contains(where: { $0.iiidea.id == id }) else {
                return Response(status: .notFound)
            }
            return runEvents(request, iiidea: id)
        }
        for (verb, enabled) in [("enable", true), ("disable", false)] {
            routes.post("console/iiideas/:id/\(verb)") { request, context -> Response in
                let id = try context.decodedParameter("id")
                return try await change(request) { session, _ in
                    do {
                        try await router.switchIiidea(id, enabled: enabled)
                    } catch {
                        return notFound(session, "No iiidea '\(id)'.")
                    }
                    return Self.redirect("/console/iiideas?done=\(verb)d&id=\(Self.queryEscaped(id))")
                }
            }
        }
        routes.post("console/iiideas/:id/delete") { request, context -> Response in
            let id = try context.decodedParameter("id")
            return try await change(request) { session, _ in
                do throws(IiideaCatalog.Refusal) {
                    try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in try catalog.delete(id) }
                } catch {
                    return page(
                        title: "iiideas", template: "iiideas", data: ["iiideas": await catalog.summaries().map { summaryView($0) }],
                        session: session, nav: "iiideas", problem: error.description, status: Self.status(of: error))
                }
                return Self.redirect("/console/iiideas?done=deleted&id=\(Self.queryEscaped(id))")
            }
        }
        routes.post("console/iiideas/:id/preferences") { request, context -> Response in
            let id = try context.decodedParameter("id")
            return try await change(request) { session, form in
                guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                    return notFound(session, "No iiidea '\(id)'.")
                }
                do throws(IiideaCatalog.Refusal) {
                    let preferences = try readPreferences(form, of: summary.declaration)
                    try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in
                        try catalog.setPreferences(of: id, to: preferences)
                    }
                    return Self.redirect("/console/iiideas/\(Self.queryEscaped(id))?done=saved")
                } catch {
                    return settingsPage(summary, session: session, posted: form, refusal: error)
                }
            }
        }
        routes.post("console/iiideas/:id/preferences/reset") { request, context -> Response in
            let id = try context.decodedParameter("id")
            return try await change(request) { session, _ in
                do throws(IiideaCatalog.Refusal) {
                    try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in
                        try catalog.setPreferences(of: id, to: PiecePreferences(), reset: true)
                    }
                } catch {
                    return notFound(session, error.description)
                }
                return Self.redirect("/console/iiideas/\(Self.queryEscaped(id))?done=reset")
            }
        }
        routes.post("console/iiideas/:id/run") { request, context -> Response in
            let id = try context.decodedParameter("id")
            return try await change(request) { session, form in
                guard let summary = await catalog.summaries().first(where: { $0.id == id }) else {
                    return notFound(session, "No iiidea '\(id)'.")
                }
                guard let input = try? JSONValue(parsing: Array((form["input"] ?? "{}").utf8)) else {
                    return settingsPage(summary, session: session, posted: form, refusal: .invalid("The sample input is not JSON."))
                }
                do throws(RouterError) {
                    _ = try router.runIiidea(id, input: input)
                } catch {
                    return settingsPage(summary, session: session, posted: form, refusal: .invalid(error.reason))
                }
                return Self.redirect("/console/iiideas/\(Self.queryEscaped(id))/runs?done=started")
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
            "run_id": run.id, "started": Self.time(run.startedAt), "started_iso": Clock.rfc3339(unixNanos: run.startedAt),
            "outcome": run.outcome.rawValue,
            "input": Redaction.redact(Self.pretty(run.input)), "output": Redaction.redact(Self.pretty(run.output)),
        ]
        view["duration"] = run.endedAt.map { Self.duration($0 - run.startedAt) } ?? "—"
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
        data.merge(preferenceForms(of: declaration, values: declaration.shownPreferences, posted: posted, errors: refusal?.fields ?? [:])) {
            _, new in new
        }
        data["read_only"] = summary.template == nil
        let lastInput = (try? router.iiideaRunStore?.runs(iiidea: summary.id, limit: 1))?.first?.input
        data["sample_input"] = posted?["input"] ?? lastInput.map { Self.pretty($0) } ?? "{}"
        return page(
            title: declaration.title ?? summary.id, template: "iiidea", data: data, session: session, nav: "iiideas", notice: notice,
            problem: refusal?.description, status: refusal.map(Self.status) ?? .ok)
    }

    private func runsPage(_ summary: IiideaSummary, request: Request, session: ConsoleSessions.Session) -> Response {
        let query = request.uri.queryParameters
        let outcome = query.get("outcome").flatMap { IiideaRun.Outcome(rawValue: $0) }
        let pageNumber = max(0, min(query.get("page", as: Int.self) ?? 0, 10_000))
        let runs =
            (try? router.iiideaRunStore?.runs(
                iiidea: summary.id, outcome: outcome, limit: Self.runsPerPage + 1, offset: pageNumber * Self.runsPerPage))
            ?? []
        let base = "/console/iiideas/\(Self.queryEscaped(summary.id))/runs?outcome=\(outcome?.rawValue ?? "")&page="
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
        return page(
            title: "Runs of \(summary.declaration.title ?? summary.id)", template: "runs", data: data, session: session, nav: "iiideas",
            notice: Self.notice(request), live: live ? ("runs", "/console/events/runs?iiidea=\(Self.queryEscaped(summary.id))") : nil)
    }

    /// Server-sent events: `event: run` with `{"run": ID, "html": "<tr…>"}` as each run of
    /// `iiidea` starts and ends; a heartbeat every 15 s.
    private func runEvents(_ request: Request, iiidea: String) -> Response {
        let feed = router.runFeed.subscribe()
        let runs = router.iiideaRunStore
        let console = self
        return eventStream(
            for: request, tick: .seconds(15),
            source: { output in
                for await event in feed where event.iiidea == iiidea {
                    guard let run = try? runs?.run(id: event.run) else { continue }
                    let html = ConsoleTemplates.library.render(console.runView(run), withTemplate: "run_row") ?? ""
                    output.yield("event: run\ndata: \(JSONValue.object(["run": .string(run.id), "html": .string(html)]).serialized())\n\n")
                }
            })
    }

    /// The preferences a posted settings form gives for the pieces of `declaration`, read by
    /// their schemas; a value they cannot read is refused at its field.
    func readPreferences(_ form: [String: String], of declaration: IiideaDeclaration) throws(IiideaCatalog.Refusal) -> PiecePreferences {
        let schemas = router.preferenceSchemas(of: declaration)
        let locked = declaration.lockedPieces
        let service = ConsoleForm(piece: "service", schema: schemas.service, locked: locked.service).read(form)
        let action = ConsoleForm(piece: "action", schema: schemas.action, locked: locked.action).read(form)
        let errors = service.errors.merging(action.errors) { first, _ in first }
        guard errors.isEmpty else { throw .invalid("Some values are not valid; see the fields.", fields: errors) }
        return PiecePreferences(service: service.value, action: action.value)
    }

    /// The service and action forms of `declaration` for the templates, filled from `values`
    /// (or what was `posted`), with `errors` at their fields.
    func preferenceForms(
        of declaration: IiideaDeclaration, values: PiecePreferences, posted: [String: String]?, errors: [String: String]
    ) -> [String: Any] {
        let schemas = router.preferenceSchemas(of: declaration)
        let locked = declaration.lockedPieces
        return [
            "service_form": [
                "legend": "Service: \(declaration.piece.value)",
                "form": ConsoleForm(piece: "service", schema: schemas.service, locked: locked.service).view(
                    values: values.service, posted: posted, errors: errors),
            ],
            "action_form": [
                "legend": "Action: \(declaration.action.value)",
                "form": ConsoleForm(piece: "action", schema: schemas.action, locked: locked.action).view(
                    values: values.action, posted: posted, errors: errors),
            ],
        ]
    }

    func notFound(_ session: ConsoleSessions.Session, _ message: String) -> Response {
        page(title: "Not found", template: "iiideas", data: ["iiideas": []], session: session, problem: message, status: .notFound)
    }

    static func status(of refusal: IiideaCatalog.Refusal) -> HTTPResponse.Status {
        switch refusal.kind {
        case .notFound: .notFound
        case .conflict: .conflict
        case .invalid: .unprocessableContent
        case .unavailable: .serviceUnavailable
        }
    }

    /// The notice a redirect after a change asks for (`?done=…&id=…`): fixed sentences only.
    static func notice(_ request: Request) -> String? {
        let query = Self.query(request)
        // Only an id as ids are written: a crafted link cannot put a sentence in the banner.
        let given = query["id"] ?? ""
        let id = given.count <= 64 && given.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) ? given : "it"
        switch query["done"] {
        case "enabled": return "Enabled \(id)."
        case "disabled": return "Disabled \(id)."
        case "deleted": return "Deleted \(id)."
        case "obtained": return "Obtained \(id); it runs now."
        case "saved": return "Saved; the pieces run with the new preferences."
        case "reset": return "Back to the route file's preferences."
        case "started": return "Started a test run; it appears below."
        case "replayed": return "Replayed dead letter \(id)."
        case "dropped": return "Dropped dead letter \(id)."
        default: return nil
        }
    }

    /// JSON text indented for reading; other text as it is.
    static func pretty(_ text: String?) -> String {
        guard let text else { return "" }
        guard let value = try? JSONValue(parsing: Array(text.utf8)),
            let object = try? JSONSerialization.jsonObject(with: Data(value.serialized().utf8), options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed])
        else { return text }
        return String(decoding: data, as: UTF8.self)
    }
}
