internal import SwitchyardCore

/// Reads one entry of `iiideas:` or `iiidea_templates:` into an ``IiideaDeclaration``. Apart
/// from ``RouteFileMerger`` because an iiidea is a chain of sections with rules of their own;
/// it owns the entry and the problems found in it, since a problem anywhere drops the iiidea,
/// but only after all are reported.
struct IiideaDecoder {
    private static let iiideaKeys = RouteFileSchema.names(RouteFileSchema.iiideaKeys)
    /// A template is an iiidea with a description and tags for the store's search.
    /// A template has no owner: whoever obtains it gives one.
    private static let templateKeys = RouteFileSchema.names(RouteFileSchema.templateKeys)

    /// The entry.
    private let element: ConfigNode
    /// The keys the entry may have: a template's are not an iiidea's.
    private let keys: [String]
    /// What the entry is, for its problems: "iiidea" or "iiidea template".
    private let what: String
    /// The entry's problems, in the order met.
    private(set) var problems: [Diagnostic] = []

    /// Adds the iiideas of the `iiideas:` section `node` to `iiideas`, and the problems of the
    /// entries it drops to `diagnostics`.
    static func decodeIiideas(_ node: ConfigNode, into iiideas: inout [IiideaDeclaration], diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'iiideas' must be a list of { id, trigger, service, action }", at: node.location))
            return
        }
        for element in elements {
            if let previous = element["id"]?.string.flatMap({ id in iiideas.first { $0.id == id } }) {
                diagnostics.append(
                    Diagnostic(
                        "iiidea '\(previous.id)' is already defined at \(previous.location)",
                        at: element["id"]?.location ?? element.location))
                continue
            }
            var decoder = IiideaDecoder(element: element, keys: iiideaKeys, what: "iiidea")
            let iiidea = decoder.decode()
            diagnostics += decoder.problems
            if let iiidea { iiideas.append(iiidea) }
        }
    }

    /// `iiidea_templates:`: the store's catalog, iiideas a person obtains with their own preferences.
    static func decodeTemplates(_ node: ConfigNode, into templates: inout [IiideaTemplate], diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'iiidea_templates' must be a list of { id, trigger, service, action }", at: node.location))
            return
        }
        for element in elements {
            if let previous = element["id"]?.string.flatMap({ id in templates.first { $0.id == id } }) {
                diagnostics.append(
                    Diagnostic(
                        "iiidea template '\(previous.id)' is already defined at \(previous.declaration.location)",
                        at: element["id"]?.location ?? element.location))
                continue
            }
            var decoder = IiideaDecoder(element: element, keys: templateKeys, what: "iiidea template")
            let parsed = decoder.decode()
            diagnostics += decoder.problems
            guard let declaration = parsed else { continue }
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
            templates.append(IiideaTemplate(declaration: declaration, description: element["description"]?.string, tags: tags))
        }
    }

    private init(element: ConfigNode, keys: [String], what: String) {
        self.element = element
        self.keys = keys
        self.what = what
    }

    /// The iiidea, or nil when the entry has a problem; every key is checked either way, so
    /// that one load reports all of the entry's problems.
    private mutating func decode() -> IiideaDeclaration? {
        guard element.members != nil else {
            fail("an \(what) must be a mapping with id, trigger, service and action", element.location)
            return nil
        }
        for member in element.members ?? [] where !keys.contains(member.key) {
            fail("unknown key '\(member.key)' in \(what) (expected: \(keys.joined(separator: ", ")))", member.keyLocation)
        }
        guard let id = element["id"]?.string, ConfigLoader.isName(id) else {
            fail("an \(what) needs an 'id' of letters, digits, '-' and '_'", element["id"]?.location ?? element.location)
            return nil
        }
        let trigger = section("trigger", of: id, allowed: RouteFileSchema.names(RouteFileSchema.triggerKeys))
        let service = section("service", of: id, allowed: RouteFileSchema.names(RouteFileSchema.serviceKeys))
        let action = section("action", of: id, allowed: RouteFileSchema.names(RouteFileSchema.actionKeys))
        let triggerPort = trigger.flatMap { port($0["port"], "trigger.port", of: id) }
        let actionPort = action.flatMap { port($0["port"], "action.port", of: id) }
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
                remote = port(members[0].value, "remote.port", of: id)
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
        guard problems.isEmpty, let triggerPort, let actionPort, let piece else { return nil }
        var declaration = IiideaDeclaration(
            id: id, location: element.location, title: element["title"]?.string, trigger: triggerPort, when: when, piece: piece,
            servicePreferences: service?["preferences"], action: actionPort, actionPreferences: action?["preferences"],
            remote: remote, enabledByDefault: enabled)
        declaration.owner = element["owner"]?.string
        return declaration
    }

    private mutating func fail(_ message: String, _ location: SourceLocation) {
        problems.append(Diagnostic(message, at: location))
    }

    /// `instance.port` at `node`, the `key` of iiidea `id`.
    private mutating func port(_ node: ConfigNode?, _ key: String, of id: String) -> Located<PortReference>? {
        guard let node else {
            fail("iiidea '\(id)' needs \(key)", element.location)
            return nil
        }
        guard let text = node.string, let reference = PortReference(text) else {
            fail("\(key) must be 'instance.port'", node.location)
            return nil
        }
        return Located(reference, at: node.location)
    }

    /// The mapping at `key` of iiidea `id`, whose keys must be among `allowed`.
    private mutating func section(_ key: String, of id: String, allowed: [String]) -> ConfigNode? {
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
}
