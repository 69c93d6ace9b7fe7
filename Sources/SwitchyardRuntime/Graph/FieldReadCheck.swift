internal import SwitchyardCore
internal import SwitchyardRouting

/// Whether the body fields a condition or template reads exist in the types it will see: what
/// `validate` reports for a route, and the admin port for a tap's condition.
enum FieldReadCheck {
    /// One problem per read of a body field that none of `types` has (a port that emits several
    /// types is a union: the read is wrong only when none of them has the field). Types the
    /// registry does not know, and an empty list (untyped), are not checked.
    static func problems(
        _ reads: [(field: EnvelopeField, offset: Int)], at location: SourceLocation?, what: String, types: [String], registry: TypeRegistry
    ) -> [Diagnostic] {
        var problems: [Diagnostic] = []
        for read in reads {
            guard case .body(let path) = read.field, !path.isEmpty else { continue }
            var missing: [Diagnostic] = []
            var checked = 0
            for typeName in types {
                guard let definition = registry[typeName] else { continue }
                checked += 1
                if case .missing(let component, let known) = definition.schema.lookup(path) {
                    let fields = known.isEmpty ? "" : " (fields: \(known.joined(separator: ", ")))"
                    missing.append(
                        Diagnostic(
                            "\(what) reads \(read.field), but type \(typeName) has no field '\(component)'\(fields)",
                            at: location?.advanced(by: read.offset)))
                }
            }
            if missing.count == checked { problems += missing }
        }
        return problems
    }
}
