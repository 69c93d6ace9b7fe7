internal import SwitchyardCore
internal import SwitchyardScript

/// Reads one entry of `routes:` into a ``RouteDeclaration``. Apart from ``RouteFileMerger``
/// because a route is most of a route file's rules; it owns the entry and the problems found in
/// it, since a problem anywhere in a route drops the route, but only after all are reported.
struct RouteDecoder {
    private static let routeKeys = RouteFileSchema.names(RouteFileSchema.routeKeys)

    /// The `routes:` entry.
    private let element: ConfigNode
    /// The route file the entry is in: a script's `file:` is taken from its folder.
    private let file: String
    /// The route's `name`, else its file's name and its place in the list (`routes.yaml#2`).
    private let name: String
    /// The entry's problems, in the order met.
    private(set) var problems: [Diagnostic] = []

    /// Adds the routes of the `routes:` section `node` of `file` to `routes`, and the problems
    /// of the entries it drops to `diagnostics`.
    static func decodeRoutes(_ node: ConfigNode, file: String, into routes: inout [RouteDeclaration], diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'routes' must be a list of routes", at: node.location))
            return
        }
        for (index, element) in elements.enumerated() {
            guard let members = element.members else {
                diagnostics.append(Diagnostic("a route must be a mapping with 'from' and 'to'", at: element.location))
                continue
            }
            var decoder = RouteDecoder(element: element, file: file, index: index)
            let route = decoder.decode(members, declared: routes)
            diagnostics += decoder.problems
            if let route { routes.append(route) }
        }
    }

    private init(element: ConfigNode, file: String, index: Int) {
        self.element = element
        self.file = file
        let fileName = String(file.split(separator: "/").last ?? Substring(file))
        name = element["name"]?.scalarText ?? "\(fileName)#\(index + 1)"
    }

    /// The route, or nil when the entry has a problem; every key is checked either way, so that
    /// one load reports all of the entry's problems.
    private mutating func decode(
        _ members: [(key: String, keyLocation: SourceLocation, value: ConfigNode)], declared: [RouteDeclaration]
    ) -> RouteDeclaration? {
        for member in members where !Self.routeKeys.contains(member.key) {
            fail("unknown key '\(member.key)' in route (expected one of: \(Self.routeKeys.joined(separator: ", ")))", member.keyLocation)
        }
        if let previous = declared.first(where: { $0.name == name }) {
            fail("route name '\(name)' is already used at \(previous.location)", element["name"]?.location ?? element.location)
        }
        var from: Located<PortReference>?
        if let fromNode = element["from"] {
            from = port(fromNode)
        } else {
            fail("route '\(name)' needs 'from: instance.port'", element.location)
        }
        let to = destinations()
        let when = text("when")
        let template = text("template")
        let outputType = text("type")
        let contentType = text("content_type")
        let map = element["map"]
        if let map, map.members == nil {
            fail("'map' must be a mapping of body fields to templates", map.location)
        }
        if map != nil, template != nil {
            fail("a route has either 'map' or 'template', not both", element["template"]?.location ?? element.location)
        }
        var script: ScriptDeclaration?
        if let node = element["script"] {
            if map != nil || template != nil {
                fail("a route has at most one of 'map', 'template' and 'script'; a script builds the whole envelope", node.location)
            }
            script = ScriptDeclaration.read(node, file: file, diagnostics: &problems)
        }
        let queue = queueSettings()
        let delivery = deliveryGuarantee()
        if queue.onFull == .spool, delivery != .atLeastOnce {
            fail(
                "queue.on_full: spool keeps the backlog in the durable spool, which needs 'delivery: at-least-once' on the route",
                element["queue"]?["on_full"]?.location ?? element.location)
        }
        let retry = retryPolicy(for: delivery)
        let dedupe = dedupeSettings(for: delivery)
        let allowLoops = loopsAllowed()
        guard problems.isEmpty, let from else { return nil }
        return RouteDeclaration(
            name: name, location: element.location, from: from, to: to, when: when, map: map, template: template,
            outputType: outputType, contentType: contentType, queueSize: queue.size, onFull: queue.onFull, allowLoops: allowLoops,
            delivery: delivery, retry: retry, dedupeWindow: dedupe.window, dedupeKey: dedupe.key, spoolLimit: queue.spoolLimit,
            script: script
        )
    }

    private mutating func fail(_ message: String, _ location: SourceLocation) {
        problems.append(Diagnostic(message, at: location))
    }

    /// `instance.port` at `node`.
    private mutating func port(_ node: ConfigNode) -> Located<PortReference>? {
        guard let text = node.string, let reference = PortReference(text) else {
            fail("expected a port as 'instance.port', found \(node.kindName)\(node.string.map { " '\($0)'" } ?? "")", node.location)
            return nil
        }
        return Located(reference, at: node.location)
    }

    /// `to:`: one port, or a list of them.
    private mutating func destinations() -> [Located<PortReference>] {
        switch element["to"] {
        case nil:
            fail("route '\(name)' needs 'to: instance.port' (or a list of them)", element.location)
            return []
        case let node? where node.elements != nil:
            var to: [Located<PortReference>] = []
            for target in node.elements ?? [] {
                if let reference = port(target) { to.append(reference) }
            }
            if to.isEmpty { fail("route '\(name)': 'to' lists no port", node.location) }
            return to
        case let node?:
            return port(node).map { [$0] } ?? []
        }
    }

    /// The string at `key`, nil when there is none.
    private mutating func text(_ key: String) -> Located<String>? {
        guard let node = element[key] else { return nil }
        guard let value = node.scalarText, node.elements == nil, node.members == nil else {
            fail("'\(key)' must be a string, found \(node.kindName)", node.location)
            return nil
        }
        return Located(value, at: node.location)
    }

    /// `queue: { size, on_full, spool_limit }`, with the defaults for what it leaves out.
    private mutating func queueSettings() -> (size: Int, onFull: OnFull, spoolLimit: Int) {
        var settings = (size: ConfigLoader.defaultQueueSize, onFull: OnFull.block, spoolLimit: ConfigLoader.defaultSpoolLimit)
        guard let queue = element["queue"] else { return settings }
        guard let members = queue.members else {
            fail("'queue' must be a mapping such as { size: 1024, on_full: block }", queue.location)
            return settings
        }
        for member in members {
            switch member.key {
            case "size":
                if case .scalar(.int(let size)) = member.value.kind, size > 0, size <= ConfigLoader.maximumQueueSize {
                    settings.size = size
                } else {
                    // The queue's slots are allocated up front: a typo must not ask for terabytes.
                    fail("queue.size must be an integer from 1 to \(ConfigLoader.maximumQueueSize)", member.value.location)
                }
            case "on_full":
                if let value = member.value.string.flatMap(OnFull.init(rawValue:)) {
                    settings.onFull = value
                } else {
                    fail("queue.on_full must be one of: \(OnFull.allCases.map(\.rawValue).joined(separator: ", "))", member.value.location)
                }
            case "spool_limit":
                if let bytes = ByteSizeText.bytes(member.value.json), bytes > 0 {
                    settings.spoolLimit = bytes
                } else {
                    fail("queue.spool_limit must be a size such as 512MB or 1GiB", member.value.location)
                }
            default:
                fail(
                    RouteFileSchema.unknownKey(member.key, in: "queue", expected: RouteFileSchema.queueKeys),
                    member.keyLocation)
            }
        }
        return settings
    }

    /// `delivery:`, at-most-once unless it says otherwise.
    private mutating func deliveryGuarantee() -> Delivery {
        guard let node = element["delivery"] else { return .atMostOnce }
        guard let value = node.string.flatMap(Delivery.init(rawValue:)) else {
            fail("'delivery' must be one of: \(Delivery.allCases.map(\.rawValue).joined(separator: ", "))", node.location)
            return .atMostOnce
        }
        return value
    }

    /// `retry: { attempts, backoff, max_backoff }`, which only an at-least-once route has.
    private mutating func retryPolicy(for delivery: Delivery) -> RetryPolicy {
        var retry = RetryPolicy.standard
        guard let node = element["retry"] else { return retry }
        if delivery != .atLeastOnce {
            fail("'retry' applies to 'delivery: at-least-once' routes only", node.location)
        }
        guard let members = node.members else {
            fail("'retry' must be a mapping such as { attempts: 5, backoff: 200ms, max_backoff: 30s }", node.location)
            return retry
        }
        for member in members {
            switch member.key {
            case "attempts":
                if case .scalar(.int(let attempts)) = member.value.kind, attempts > 0 {
                    retry.attempts = attempts
                } else {
                    fail("retry.attempts must be a positive integer", member.value.location)
                }
            case "backoff", "max_backoff":
                if let nanos = DurationText.nanoseconds(member.value.json), nanos > 0 {
                    if member.key == "backoff" { retry.backoff = nanos } else { retry.maxBackoff = nanos }
                } else {
                    fail("retry.\(member.key) must be a duration such as 200ms or 30s", member.value.location)
                }
            default:
                fail(
                    RouteFileSchema.unknownKey(member.key, in: "retry", expected: RouteFileSchema.retryKeys),
                    member.keyLocation)
            }
        }
        if retry.maxBackoff < retry.backoff { retry.maxBackoff = retry.backoff }
        return retry
    }

    /// `dedupe:`, a window or `{ key, window }`, which only an at-least-once route has; no
    /// window when the route does not deduplicate.
    private mutating func dedupeSettings(for delivery: Delivery) -> (window: UInt64?, key: Located<String>?) {
        guard let node = element["dedupe"] else { return (nil, nil) }
        if delivery != .atLeastOnce {
            fail("'dedupe' applies to 'delivery: at-least-once' routes only", node.location)
            return (nil, nil)
        }
        guard let members = node.members else {
            if let nanos = DurationText.nanoseconds(node.json), nanos > 0 { return (nanos, nil) }
            fail(
                "'dedupe' must be a duration such as 10m (how long envelope ids are remembered) or { key: TEMPLATE, window: 10m }",
                node.location)
            return (nil, nil)
        }
        var settings: (window: UInt64?, key: Located<String>?) = (ConfigLoader.defaultDedupeWindow, nil)
        for member in members {
            switch member.key {
            case "key":
                if let text = member.value.string, !text.isEmpty {
                    settings.key = Located(text, at: member.value.location)
                } else {
                    fail("dedupe.key must be a template such as \"{{body.message_id}}\"", member.value.location)
                }
            case "window":
                if let nanos = DurationText.nanoseconds(member.value.json), nanos > 0 {
                    settings.window = nanos
                } else {
                    fail("dedupe.window must be a duration such as 10m (how long keys are remembered)", member.value.location)
                }
            default:
                fail(
                    RouteFileSchema.unknownKey(member.key, in: "dedupe", expected: RouteFileSchema.dedupeKeys),
                    member.keyLocation)
            }
        }
        return settings
    }

    /// `loop:`: whether an envelope may pass this route twice.
    private mutating func loopsAllowed() -> Bool {
        guard let loop = element["loop"] else { return false }
        switch loop.string {
        case "allow": return true
        case "prevent": return false
        default:
            fail("'loop' must be 'prevent' (the default) or 'allow'", loop.location)
            return false
        }
    }
}
