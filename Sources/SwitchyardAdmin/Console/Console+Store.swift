import Hummingbird
import SwitchyardConfig
import SwitchyardCore
import SwitchyardRuntime
import SwitchyardSpool

extension Console {
    func addStorePages(to routes: Hummingbird.Router<BasicRequestContext>) {
        routes.get("console/store") { request, _ -> Response in
            guard let session = sessions.session(of: request) else { return signIn(request) }
            let query = String((Self.query(request)["q"] ?? "").prefix(200))
            let templates = catalog.templates(matching: query).map(templateView)
            var data: [String: Any] = ["templates": templates]
            data["query"] = query.isEmpty ? nil : query
            return page(title: "Store", template: "store", data: data, session: session, nav: "store")
        }
        routes.get("console/store/:template") { request, context -> Response in
            guard let session = sessions.session(of: request) else { return signIn(request) }
            let id = try context.parameters.require("template")
            guard let template = catalog.templates().first(where: { $0.id == id }) else { return notFound(session, "No template '\(id)'.") }
            return obtainPage(template, session: session)
        }
        routes.post("console/store/:template") { request, context -> Response in
            let templateID = try context.parameters.require("template")
            return try await change(request) { session, form in
                guard let template = catalog.templates().first(where: { $0.id == templateID }) else {
                    return notFound(session, "No template '\(templateID)'.")
                }
                let schemas = router.preferenceSchemas(of: template.declaration)
                let service = ConsoleForm(piece: "service", schema: schemas.service).read(form)
                let action = ConsoleForm(piece: "action", schema: schemas.action).read(form)
                var refusal = IiideaCatalog.Refusal.invalid(
                    "Some values are not valid; see the fields.", fields: service.errors.merging(action.errors) { first, _ in first })
                if refusal.fields.isEmpty {
                    do throws(IiideaCatalog.Refusal) {
                        let id = try catalog.obtain(
                            template: templateID, id: form["id"], title: form["title"],
                            preferences: PiecePreferences(service: service.value, action: action.value))
                        return Self.redirect("/console/iiideas?done=obtained&id=\(Self.queryEscaped(id))")
                    } catch {
                        refusal = error
                    }
                }
                return obtainPage(template, session: session, posted: form, refusal: refusal)
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
        let schemas = router.preferenceSchemas(of: declaration)
        let errors = refusal?.fields ?? [:]
        var data = templateView(template)
        data["template_id"] = template.id
        data["new_id"] = posted?["id"] ?? catalog.freeID(for: template.id)
        data["new_title"] = posted?["title"] ?? declaration.title ?? ""
        data["id_error"] = errors["id"]
        data["service_form"] = [
            "legend": "Service: \(declaration.piece.value)",
            "form": ConsoleForm(piece: "service", schema: schemas.service).view(
                values: declaration.servicePreferences?.json, posted: posted, errors: errors),
        ]
        data["action_form"] = [
            "legend": "Action: \(declaration.action.value)",
            "form": ConsoleForm(piece: "action", schema: schemas.action).view(
                values: declaration.actionPreferences?.json, posted: posted, errors: errors),
        ]
        return page(
            title: "Obtain: \(declaration.title ?? template.id)", template: "template_form", data: data, session: session, nav: "store",
            problem: refusal?.description, status: refusal.map(Self.status) ?? .ok)
    }
}
