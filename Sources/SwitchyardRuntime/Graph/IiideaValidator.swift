internal import SwitchyardConfig
internal import SwitchyardCore
internal import SwitchyardRouting
internal import SwitchyardScript

/// Checks iiideas (and iiidea templates) and compiles their service pieces: the built-in
/// ones from their preferences, a plugin's from its service port.
///
/// Separate from ``RouteValidator`` because the pieces' preferences are a language of their
/// own; the routes an iiidea runs on are checked by the route validator it holds, against
/// the same instances and types as every other route.
struct IiideaValidator {
    /// Checks the iiidea's routes and resolves its service port.
    let routeValidator: RouteValidator

    /// Checks an iiidea as the routes it runs on (trigger → action, remote → action) and
    /// compiles its service piece.
    func check(_ iiidea: IiideaDeclaration, context: inout GraphValidationContext) -> PlannedIiidea? {
        let before = context.diagnostics.count
        let preferences = iiidea.servicePreferences
        func preference(_ key: String) -> ConfigNode? { preferences?[key] }
        func require(_ key: String, _ what: String) -> ConfigNode? {
            guard let node = preference(key) else {
                context.diagnostics.append(
                    Diagnostic("service piece '\(iiidea.piece.value)' needs preferences.\(key) (\(what))", at: iiidea.piece.location))
                return nil
            }
            return node
        }
        var map: ConfigNode?
        var script: ScriptDeclaration?
        var service = PlannedIiidea.Service.pass
        switch iiidea.piece.value {
        case "pass":
            service = .pass
        case "template":
            guard let text = require("text", "a template") else { return nil }
            map = ConfigNode(kind: .mapping([(key: "text", keyLocation: text.location, value: text)]), location: text.location)
            service = .template
        case "map":
            guard let node = require("map", "a mapping of output fields to templates") else { return nil }
            guard node.members != nil else {
                context.diagnostics.append(Diagnostic("preferences.map must be a mapping", at: node.location))
                return nil
            }
            map = node
            service = .map
        case "delay":
            guard let node = require("duration", "such as 2s") else { return nil }
            guard let nanos = DurationText.nanoseconds(node.json) else {
                context.diagnostics.append(Diagnostic("preferences.duration must be a duration such as 500ms or 2s", at: node.location))
                return nil
            }
            service = .delay(nanos)
        case "script":
            guard let preferences else {
                context.diagnostics.append(
                    Diagnostic("service piece 'script' needs preferences.source (Lua text) or preferences.file", at: iiidea.piece.location))
                return nil
            }
            guard let declaration = ScriptDeclaration.read(preferences, file: iiidea.location.file, diagnostics: &context.diagnostics)
            else {
                return nil
            }
            script = declaration
            service = .script
        case "http":
            guard let url = require("url", "a URL template"), url.string != nil, let preferences else {
                if preference("url") != nil {
                    context.diagnostics.append(
                        Diagnostic("preferences.url must be a string", at: preference("url")?.location ?? iiidea.piece.location))
                }
                return nil
            }
            var timeout: UInt64 = 10_000_000_000
            var policy = HTTPPiecePolicy()
            var oauth: String?
            var request: [(key: String, keyLocation: SourceLocation, value: ConfigNode)] = []
            for member in preferences.members ?? [] {
                switch member.key {
                case "auth":
                    guard let name = member.value["oauth"]?.string, member.value.members?.count == 1 else {
                        context.diagnostics.append(Diagnostic("preferences.auth must be { oauth: CONNECTION }", at: member.value.location))
                        continue
                    }
                    guard context.config.oauth.contains(where: { $0.name == name }) else {
                        let known = context.config.oauth.map(\.name).joined(separator: ", ")
                        context.diagnostics.append(
                            Diagnostic(
                                "preferences.auth names OAuth connection '\(name)', which oauth: does not declare (declared: \(known.isEmpty ? "none" : known))",
                                at: member.value.location))
                        continue
                    }
                    oauth = name
                case "allow_private":
                    guard case .bool(let allowed) = member.value.json else {
                        context.diagnostics.append(Diagnostic("preferences.allow_private must be true or false", at: member.value.location))
                        continue
                    }
                    policy.allowPrivate = allowed
                case "max_redirects":
                    guard let count = member.value.json.intValue, (0...HTTPPiecePolicy.redirectLimit).contains(count) else {
                        context.diagnostics.append(
                            Diagnostic(
                                "preferences.max_redirects must be a whole number from 0 to \(HTTPPiecePolicy.redirectLimit)",
                                at: member.value.location))
                        continue
                    }
                    policy.maximumRedirects = count
                case "timeout":
                    guard let nanos = DurationText.nanoseconds(member.value.json), nanos > 0 else {
                        context.diagnostics.append(
                            Diagnostic("preferences.timeout must be a duration such as 5s", at: member.value.location))
                        continue
                    }
                    timeout = nanos
                case "method":
                    let methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
                    if let method = member.value.string, methods.contains(method) {
                        request.append(member)
                    } else {
                        context.diagnostics.append(
                            Diagnostic("preferences.method must be one of \(methods.joined(separator: ", "))", at: member.value.location))
                    }
                case "url", "headers", "body": request.append(member)
                default:
                    context.diagnostics.append(
                        Diagnostic(
                            "unknown key '\(member.key)' in http preferences (expected: method, url, headers, body, timeout, allow_private, max_redirects, auth)",
                            at: member.keyLocation))
                }
            }
            // A token goes where the route file says, never where an envelope says: with a
            // connection, the URL's scheme and host are literal.
            if oauth != nil, let text = url.string {
                let parts = text.components(separatedBy: "://")
                let authority = parts.count > 1 ? parts[1].prefix { $0 != "/" && $0 != "?" } : ""
                if parts.count < 2 || parts[0].contains("{{") || authority.isEmpty || authority.contains("{{") {
                    context.diagnostics.append(
                        Diagnostic(
                            "preferences.url must name its scheme and host literally when auth names an OAuth connection (only the path and query may be templates)",
                            at: url.location))
                    return nil
                }
            }
            let node = ConfigNode(kind: .mapping(request), location: preferences.location)
            guard
                case .object(var members)? = routeValidator.compileMap(
                    node, diagnostics: &context.diagnostics, readProblems: { _, _, _ in [] })
            else {
                return nil
            }
            // Values inserted into the URL are percent-encoded: an envelope cannot add a path,
            // a query or another host.
            do {
                let template = try Template(parsing: url.string ?? "", at: url.location, escaping: .percentEncoded)
                members = members.map { $0.0 == "url" ? ("url", .template(template)) : $0 }
            } catch {
                context.diagnostics.append(error)
                return nil
            }
            service = .http(request: .object(members), timeout: timeout, policy: policy, oauth: oauth)
            // The response is JSON of any shape: typed like what a map builds.
            map = ConfigNode(kind: .mapping([]), location: iiidea.piece.location)
        default:
            guard let reference = PortReference(iiidea.piece.value) else {
                context.diagnostics.append(
                    Diagnostic(
                        "unknown service piece '\(iiidea.piece.value)' (built in: \(BuiltinPieces.names.joined(separator: ", ")); or instance.port of a plugin's service port)",
                        at: iiidea.piece.location))
                return nil
            }
            guard routeValidator.resolve(Located(reference, at: iiidea.piece.location), direction: .service, context: &context) != nil
            else { return nil }
            var timeout: UInt64 = 30_000_000_000
            if let node = preference("timeout") {
                if let nanos = DurationText.nanoseconds(node.json), nanos > 0 {
                    timeout = nanos
                } else {
                    context.diagnostics.append(Diagnostic("preferences.timeout must be a duration such as 5s", at: node.location))
                }
            }
            service = .plugin(reference, preferences: preferences?.json ?? .object([:]), timeout: timeout)
            // What the plugin returns is JSON of its own making: typed like what a map builds.
            map = ConfigNode(kind: .mapping([]), location: iiidea.piece.location)
        }
        guard
            let route = routeValidator.check(
                iiidea.route(remote: false, map: map, when: iiidea.when, script: script), context: &context)
        else { return nil }
        var remoteRoute: PlannedRoute?
        if let remote = iiidea.remote {
            // An owned iiidea runs remotely only for a message naming its owner (`data.owner`).
            let owner = iiidea.owner.map { " and body.data.owner == \"\($0)\"" } ?? ""
            let condition = Located("body.notification_id == \"\(iiidea.id)\"" + owner, at: remote.location)
            remoteRoute = routeValidator.check(iiidea.route(remote: true, map: nil, when: condition), context: &context)
        }
        var actionPreferences: MapNode?
        if let node = iiidea.actionPreferences {
            actionPreferences = routeValidator.compileMap(node, diagnostics: &context.diagnostics, readProblems: { _, _, _ in [] })
        }
        guard context.diagnostics.count == before else { return nil }
        return PlannedIiidea(
            declaration: iiidea, route: route, remoteRoute: remoteRoute, service: service, actionPreferences: actionPreferences)
    }
}
