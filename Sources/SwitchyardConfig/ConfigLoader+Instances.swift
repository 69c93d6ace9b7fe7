internal import SwitchyardCore

extension ConfigLoader {
    /// The keys of an instance that are the router's, not its plugin's configuration.
    static let instanceKeys = Set(RouteFileSchema.names(RouteFileSchema.instanceKeys))

    func mergeInstances(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let members = node.members else {
            diagnostics.append(Diagnostic("'instances' must be a mapping of instance name to { plugin: NAME, ... }", at: node.location))
            return
        }
        for member in members {
            let name = member.key
            guard Self.isName(name) else {
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
                guard let level = levelNode.string, Self.logLevels.contains(level) else {
                    diagnostics.append(
                        Diagnostic("log_level must be one of: \(Self.logLevels.joined(separator: ", "))", at: levelNode.location))
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
}
