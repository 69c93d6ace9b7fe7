internal import SwitchyardCore

extension ConfigLoader {
    static let iiideaKeys = ["id", "title", "trigger", "service", "action", "remote", "enabled"]

    func mergeIiideas(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'iiideas' must be a list of { id, trigger, service, action }", at: node.location))
            return
        }
        for element in elements {
            guard element.members != nil else {
                diagnostics.append(Diagnostic("an iiidea must be a mapping with id, trigger, service and action", at: element.location))
                continue
            }
            var valid = true
            func fail(_ message: String, _ location: SourceLocation) {
                diagnostics.append(Diagnostic(message, at: location))
                valid = false
            }
            for member in element.members ?? [] where !Self.iiideaKeys.contains(member.key) {
                fail("unknown key '\(member.key)' in iiidea (expected: \(Self.iiideaKeys.joined(separator: ", ")))", member.keyLocation)
            }
            guard let id = element["id"]?.string, Self.isName(id) else {
                fail("an iiidea needs an 'id' of letters, digits, '-' and '_'", element["id"]?.location ?? element.location)
                continue
            }
            if let previous = config.iiideas.first(where: { $0.id == id }) {
                fail("iiidea '\(id)' is already defined at \(previous.location)", element["id"]?.location ?? element.location)
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
            let trigger = section("trigger", allowed: ["port", "when"])
            let service = section("service", allowed: ["piece", "preferences"])
            let action = section("action", allowed: ["port", "preferences"])
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
            guard valid, let triggerPort, let actionPort, let piece else { continue }
            config.iiideas.append(
                IiideaDeclaration(
                    id: id, location: element.location, title: element["title"]?.string, trigger: triggerPort, when: when, piece: piece,
                    servicePreferences: service?["preferences"], action: actionPort, actionPreferences: action?["preferences"],
                    remote: remote, enabledByDefault: enabled))
        }
    }
}
