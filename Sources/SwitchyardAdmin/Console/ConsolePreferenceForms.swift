import SwitchyardConfig
import SwitchyardIiideas
import SwitchyardRuntime
import SwitchyardStore

/// The service and action preference forms of an iiidea: drawn from the pieces' schemas, and
/// read back from a posted form.
///
/// It owns the iiideas reference the schemas come from; separate because two page groups show
/// these forms: an iiidea's settings (``ConsoleIiideaPages``) and obtaining a template
/// (``ConsoleStorePages``).
struct ConsolePreferenceForms: Sendable {
    let iiideas: RouterIiideas

    /// The preferences a posted settings form gives for the pieces of `declaration`, read by
    /// their schemas; a value they cannot read is refused at its field.
    func read(_ form: [String: String], of declaration: IiideaDeclaration) throws(IiideaCatalog.Refusal) -> PiecePreferences {
        let schemas = iiideas.preferenceSchemas(of: declaration)
        let locked = declaration.lockedPieces
        let service = ConsoleForm(piece: "service", schema: schemas.service, locked: locked.service).read(form)
        let action = ConsoleForm(piece: "action", schema: schemas.action, locked: locked.action).read(form)
        let errors = service.errors.merging(action.errors) { first, _ in first }
        guard errors.isEmpty else { throw .invalid("Some values are not valid; see the fields.", fields: errors) }
        return PiecePreferences(service: service.value, action: action.value)
    }

    /// The service and action forms of `declaration` for the templates, filled from `values`
    /// (or what was `posted`), with `errors` at their fields.
    func views(
        of declaration: IiideaDeclaration, values: PiecePreferences, posted: [String: String]?, errors: [String: String]
    ) -> [String: Any] {
        let schemas = iiideas.preferenceSchemas(of: declaration)
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
}
