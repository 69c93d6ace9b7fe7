internal import SwitchyardCore

extension ConfigLoader {
    static let iiideaKeys = RouteFileSchema.names(RouteFileSchema.iiideaKeys)
    /// A template is an iiidea with a description and tags for the store's search.
    /// A template has no owner: whoever obtains it gives one.
    static let templateKeys = RouteFileSchema.names(RouteFileSchema.templateKeys)

    func mergeIiideas(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'iiideas' must be a list of { id, trigger, service, action }", at: node.location))
            return
        }
        for element in elements {
            if let previous = element["id"]?.string.flatMap({ id in config.iiideas.first { $0.id == id } }) {
                diagnostics.append(
                    Diagnostic(
                        "iiidea '\(previous.id)' is already defined at \(previous.location)",
                        at: element["id"]?.location ?? element.location))
                continue
            }
            if let iiidea = parseIiidea(element, keys: Self.iiideaKeys, what: "iiidea", diagnostics: &diagnostics) {
                config.iiideas.append(iiidea)
            }
        }
    }

    /// `iiidea_templates:`: the store's catalog, iiideas a person obtains with their own preferences.
    func mergeIiideaTemplates(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'iiidea_templates' must be a list of { id, trigger, service, action }", at: node.location))
            return
        }
        for element in elements {
            if let previous = element["id"]?.string.flatMap({ id in config.iiideaTemplates.first { $0.id == id } }) {
                diagnostics.append(
                    Diagnostic(
                        "iiidea template '\(previous.id)' is already defined at \(previous.declaration.location)",
                        at: element["id"]?.location ?? element.location))
                continue
            }
            guard let declaration = parseIiidea(element, keys: Self.templateKeys, what: "iiidea template", diagnostics: &diagnostics)
            else { continue }
            var tags: [String] = []
            if let node = element["tags"] {
                if let list = node.elements, list.allSatisfy({ $0.string != nil }) {
                    tags = list.compactMap(\.string)
                } else {
                    diagnostics.append(Diagnostic("'tags' must be a list of strings", at: node.location))
                    continue
                }
            }
            if let node = element["description"], node.string == nil {
                diagnostics.append(Diagnostic("'description' must be a string", at: node.location))
                continue
            }
            config.iiideaTemplates.append(
                IiideaTemplate(declaration: declaration, description: element["description"]?.string, tags: tags))
        }
    }

    /// One iiidea (or template) mapping; nil after adding its problems to `diagnostics`.
    private func parseIiidea(_ element: ConfigNode, keys: [String], what: String, diagnostics: inout [Diagnostic]) -> IiideaDeclaration? {
        guard element.members != nil else {
            diagnostics.append(Diagnostic("an \(what) must be a mapping with id, trigger, service and action", at: element.location))
            return nil
        }
        var valid = true
        func fail(_ message: String, _ location: SourceLocation) {
            diagnostics.append(Diagnostic(message, at: location))
            valid = false
        }
        for member in element.members ?? [] where !keys.contains(member.key) {
            fail("unknown key '\(member.key)' in \(what) (expected: \(keys.joined(separator: ", ")))", member.keyLocation)
        }
        guard let id = element["id"]?.string, Self.isName(id) else {
            fail("an \(what) needs an 'id' of letters, digits, '-' and '_'", element["id"]?.location ?? element.location)
            return nil
        }
        func port(_ node: ConfigNode?, _ what: String) -> Located<PortReference>? {
            guard let node else {
                fail("iiidea '\(id)' needs \(what)", element.location)
                return nil
            }
            guard let text = node.string, let reference = PortReference(text) else {
                fail("\(what) must be 'instance.port'", node.location)
                return nil
            }
            return Located(reference, at: node.location)
        }
        func section(_ key: String, allowed: [String]) -> ConfigNode? {
            guard let node = element[key] else {
                fail("iiidea '\(id)' needs '\(key)'", element.location)
                return nil
            }
            guard let members = node.members else {
                fail("'\(key)' must be a mapping", node.location)
                return nil
            }
            for member in members where !allowed.contains(member.key) {
                fail("unknown key '\(member.key)' in \(key) (expected: \(allowed.joined(separator: ", ")))", member.keyLocation)
            }
            return node
        }
        let trigger = section("trigger", allowed: RouteFileSchema.names(RouteFileSchema.triggerKeys))
        let service = section("service", allowed: RouteFileSchema.names(RouteFileSchema.serviceKeys))
        let action = section("action", allowed: RouteFileSchema.names(RouteFileSchema.actionKeys))
        let triggerPort = trigger.flatMap { port($0["port"], "trigger.port") }
        let actionPort = action.flatMap { port($0["port"], "action.port") }
        var when: Located<String>?
        if let node = trigger?["when"] {
            if let text = node.string {
                when = Located(text, at: node.location)
            } else {
                fail("trigger.when must be a string", node.location)
            }
        }
        var piece: Located<String>?
        if let service {
            if let node = service["piece"], let text = node.string, !text.isEmpty {
                piece = Located(text, at: node.location)
            } else {
                fail("service.piece must name a piece: pass, template, map, delay, http, or instance.port", service.location)
            }
        }
        var remote: Located<PortReference>?
        if let node = element["remote"] {
            if let members = node.members, members.count == 1, members[0].key == "port" {
                remote = port(members[0].value, "remote.port")
            } else {
                fail("'remote' must be { port: instance.port }", node.location)
            }
        }
        var enabled = true
        if let node = element["enabled"] {
            if case .scalar(.bool(let value)) = node.kind {
                enabled = value
            } else {
                fail("'enabled' must be true or false", node.location)
            }
        }
        if let node = element["title"], node.string == nil { fail("'title' must be a string", node.location) }
        if let node = element["owner"], !(node.string.map(IiideaDeclaration.isOwner) ?? false) {
            fail("'owner' must be a user or device id: 1 to 128 letters, digits, '.', '_', ':', '@' or '-'", node.location)
        }
        guard valid, let triggerPort, let actionPort, let piece else { return nil }
        var declaration = IiideaDeclaration(
            id: id, location: element.location, title: element["title"]?.string, trigger: triggerPort, when: when, piece: piece,
            servicePreferences: service?["preferences"], action: actionPort, actionPreferences: action?["preferences"],
            remote: remote, enabledByDefault: enabled)
        declaration.owner = element["owner"]?.string
        return declaration
    }
}
