internal import SwitchyardCore

extension RouteFileMerger {
    /// The keys of an instance that are the router's, not its plugin's configuration.
    private static let instanceKeys = Set(RouteFileSchema.names(RouteFileSchema.instanceKeys))

    /// `instances:`: a mapping of instance names to their plugin and its configuration; the
    /// router's own keys (`plugin`, `log_level`, `exclusive`) are taken out of what the plugin gets.
    mutating func mergeInstances(_ node: ConfigNode) {
        guard let members = node.members else {
            diagnostics.append(Diagnostic("'instances' must be a mapping of instance name to { plugin: NAME, ... }", at: node.location))
            return
        }
        for member in members {
            let name = member.key
            guard ConfigLoader.isName(name) else {
                diagnostics.append(Diagnostic("instance name '\(name)' may hold only letters, digits, '-' and '_'", at: member.keyLocation))
                continue
            }
            if let previous = config.instance(named: name) {
                diagnostics.append(Diagnostic("instance '\(name)' is already defined at \(previous.location)", at: member.keyLocation))
                continue
            }
            guard let fields = member.value.members else {
                diagnostics.append(Diagnostic("instance '\(name)' must be a mapping with a 'plugin' key", at: member.value.location))
                continue
            }
            guard let pluginNode = member.value["plugin"], let plugin = pluginNode.string, !plugin.isEmpty else {
                diagnostics.append(Diagnostic("instance '\(name)' needs 'plugin: NAME'", at: member.value.location))
                continue
            }
            var logLevel: Located<String>?
            if let levelNode = member.value["log_level"] {
                guard let level = levelNode.string, ConfigLoader.logLevels.contains(level) else {
                    diagnostics.append(
                        Diagnostic("log_level must be one of: \(ConfigLoader.logLevels.joined(separator: ", "))", at: levelNode.location))
                    continue
                }
                logLevel = Located(level, at: levelNode.location)
            }
            var exclusive: Located<Bool>?
            if let exclusiveNode = member.value["exclusive"] {
                guard case .scalar(.bool(let value)) = exclusiveNode.kind else {
                    diagnostics.append(Diagnostic("exclusive must be true or false", at: exclusiveNode.location))
                    continue
                }
                exclusive = Located(value, at: exclusiveNode.location)
            }
            let rest = fields.filter { !Self.instanceKeys.contains($0.key) }
            let settings = ConfigNode(
                kind: .mapping(rest), location: member.value.location, isSecret: rest.contains(where: \.value.isSecret))
            config.instances.append(
                InstanceDeclaration(
                    name: name, location: member.keyLocation, plugin: Located(plugin, at: pluginNode.location), config: settings,
                    logLevel: logLevel, exclusive: exclusive)
            )
        }
    }

    /// `types:`: user-defined envelope types, each a name and the JSON Schema of its body.
    /// Types that come from a plugin's own type language (Qeo's QDM files) are not written
    /// here: the plugin derives them from its instance's configuration (ABI `describe`).
    mutating func mergeTypes(_ node: ConfigNode) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'types' must be a list of { name, schema } entries", at: node.location))
            return
        }
        for element in elements {
            if let qdm = element["qdm"] {
                // Route files written before the qeo plugin described its own types.
                diagnostics.append(
                    Diagnostic(
                        "'qdm' belongs to the qeo instance, not to 'types': remove this entry; the instance's own 'qdm:' files give its types, named qeo.<QDM name> (such as qeo.org.qeo.sample.simplechat.ChatMessage)",
                        at: qdm.location))
                continue
            }
            guard element.members != nil, let name = element["name"]?.string, !name.isEmpty else {
                diagnostics.append(
                    Diagnostic("a type needs a 'name' (and a 'schema' JSON Schema of its body)", at: element.location))
                continue
            }
            for member in element.members ?? [] where member.key != "name" && member.key != "schema" {
                diagnostics.append(
                    Diagnostic("unknown key '\(member.key)' in type '\(name)' (expected: name, schema)", at: member.keyLocation))
            }
            let schema = element["schema"]?.json ?? ["type": "object"]
            do {
                _ = try Schema(json: schema)
            } catch {
                let place = element["schema"].map { $0.location(ofPointer: error.pointer) }
                diagnostics.append(Diagnostic("type '\(name)': \(error)", at: place ?? element.location))
                continue
            }
            config.types.append(TypeDeclaration(name: name, schema: schema, location: element.location))
        }
    }
}
