extension Schema {
    /// `value` with every string this schema marks `format: path` passed through `resolve` —
    /// in members, array items and map values — and a path member that is absent but has a
    /// default string added with the default resolved. The router uses it to resolve relative
    /// paths of an instance's configuration from the route file's folder before the plugin
    /// sees them.
    public func resolvingPaths(in value: JSONValue, _ resolve: (String) -> String) -> JSONValue {
        switch value {
        case .string(let text) where format == "path":
            return .string(resolve(text))
        case .array(let elements):
            guard let items else { return value }
            return .array(elements.map { items.resolvingPaths(in: $0, resolve) })
        case .object(var members):
            for (name, schema) in properties {
                if let member = members[name] {
                    members[name] = schema.resolvingPaths(in: member, resolve)
                } else if schema.format == "path", let fallback = schema.defaultValue?.stringValue {
                    members[name] = .string(resolve(fallback))
                }
            }
            if case .some(.some(let extra)) = additionalProperties {
                for (name, member) in members where properties[name] == nil {
                    members[name] = extra.resolvingPaths(in: member, resolve)
                }
            }
            return .object(members)
        default:
            return value
        }
    }
}
