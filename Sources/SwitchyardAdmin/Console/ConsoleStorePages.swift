import Hummingbird
import SwitchyardConfig
import SwitchyardCore
import SwitchyardRuntime
import SwitchyardSpool

/// The console's store: the templates an iiidea can be obtained from, searched by words, and
/// the form that obtains one with its preferences.
///
/// It owns the catalog it obtains from and the preference forms it draws; separate from
/// ``ConsoleIiideaPages`` because it works on templates, not on iiideas that run.
struct ConsoleStorePages: Sendable {
    let catalog: IiideaCatalog
    let frame: ConsoleFrame
    let forms: ConsolePreferenceForms

    func addRoutes(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/store") { request, _ -> Response in
            guard let session = frame.sessions.session(of: request) else { return frame.signIn(request) }
            let query = String((Console.query(request)["q"] ?? "").prefix(200))
            let templates = catalog.templates(matching: query).map(templateView)
            var data: [String: Any] = ["templates": templates]
            data["query"] = query.isEmpty ? nil : query
            return frame.page(title: "Store", template: "store", data: data, session: session, nav: "store")
        }
        routes.get("console/store/:template") { request, context -> Response in
            guard let session = frame.sessions.session(of: request) else { return frame.signIn(request) }
            let id = try context.decodedParameter("template")
            guard let template = catalog.templates().first(where: { $0.id == id }) else {
                return frame.notFound(session, "No template '\(id)'.")
            }
            return obtainPage(template, session: session)
        }
        routes.post("console/store/:template") { request, context -> Response in
            let templateID = try context.decodedParameter("template")
            return try await frame.change(request) { session, form in
                guard let template = catalog.templates().first(where: { $0.id == templateID }) else {
                    return frame.notFound(session, "No template '\(templateID)'.")
                }
                do throws(IiideaCatalog.Refusal) {
                    let preferences = try forms.read(form, of: template.declaration)
                    let id = try await onOwnThread(named: "admin change") { () throws(IiideaCatalog.Refusal) in
                        try catalog.obtain(template: templateID, id: form["id"], title: form["title"], preferences: preferences)
                    }
                    return Console.redirect("/console/iiideas?done=obtained&id=\(Console.queryEscaped(id))")
                } catch {
                    return obtainPage(template, session: session, posted: form, refusal: error)
                }
            }
        }
    }

    private func templateView(_ template: IiideaTemplate) -> [String: Any] {
        let declaration = template.declaration
        var view: [String: Any] = [
            "id": template.id, "display_title": declaration.title ?? template.id, "trigger": declaration.trigger.value.description,
            "service": declaration.piece.value, "action": declaration.action.value.description, "tags": template.tags,
            "has_tags": !template.tags.isEmpty,
        ]
        view["description"] = template.description
        return view
    }

    private func obtainPage(
        _ template: IiideaTemplate, session: ConsoleSessions.Session, posted: [String: String]? = nil, refusal: IiideaCatalog.Refusal? = nil
    ) -> Response {
        let declaration = template.declaration
        let errors = refusal?.fields ?? [:]
        var data = templateView(template)
        data["template_id"] = template.id
        data["new_id"] = posted?["id"] ?? catalog.freeID(for: template.id)
        data["new_title"] = posted?["title"] ?? declaration.title ?? ""
        data["id_error"] = errors["id"]
        data.merge(forms.views(of: declaration, values: declaration.shownPreferences, posted: posted, errors: errors)) { _, new in new }
        return frame.page(
            title: "Obtain: \(declaration.title ?? template.id)", template: "template_form", data: data, session: session, nav: "store",
            problem: refusal?.description, status: refusal.map(Console.status) ?? .ok)
    }
}
