internal import SwitchyardCore
internal import SwitchyardScript

extension ConfigLoader {
    static let routeKeys = RouteFileSchema.names(RouteFileSchema.routeKeys)

    func mergeRoutes(_ node: ConfigNode, file: String, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'routes' must be a list of routes", at: node.location))
            return
        }
        for (index, element) in elements.enumerated() {
            guard let members = element.members else {
                diagnostics.append(Diagnostic("a route must be a mapping with 'from' and 'to'", at: element.location))
                continue
            }
            var valid = true
            func fail(_ message: String, _ location: SourceLocation) {
                diagnostics.append(Diagnostic(message, at: location))
                valid = false
            }
            for member in members where !Self.routeKeys.contains(member.key) {
                fail(
                    "unknown key '\(member.key)' in route (expected one of: \(Self.routeKeys.joined(separator: ", ")))", member.keyLocation)
            }
            let name = element["name"]?.scalarText ?? "\(Self.baseName(file))#\(index + 1)"
            if let previous = config.routes.first(where: { $0.name == name }) {
                fail("route name '\(name)' is already used at \(previous.location)", element["name"]?.location ?? element.location)
            }
            func port(_ node: ConfigNode) -> Located<PortReference>? {
                guard let text = node.string, let reference = PortReference(text) else {
                    fail("expected a port as 'instance.port', found \(node.kindName)\(node.string.map { " '\($0)'" } ?? "")", node.location)
                    return nil
                }
                return Located(reference, at: node.location)
            }
            var from: Located<PortReference>?
            if let fromNode = element["from"] {
                from = port(fromNode)
            } else {
                fail("route '\(name)' needs 'from: instance.port'", element.location)
            }
            var to: [Located<PortReference>] = []
            switch element["to"] {
            case nil: fail("route '\(name)' needs 'to: instance.port' (or a list of them)", element.location)
            case let node? where node.elements != nil:
                to = (node.elements ?? []).compactMap(port)
                if to.isEmpty { fail("route '\(name)': 'to' lists no port", node.location) }
            case let node?:
                if let reference = port(node) { to = [reference] }
            }
            func text(_ key: String) -> Located<String>? {
                guard let node = element[key] else { return nil }
                guard let value = node.scalarText, node.elements == nil, node.members == nil else {
                    fail("'\(key)' must be a string, found \(node.kindName)", node.location)
                    return nil
                }
                return Located(value, at: node.location)
            }
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
                    fail(
                        "a route has at most one of 'map', 'template' and 'script'; a script builds the whole envelope", node.location)
                }
                let before = diagnostics.count
                script = ScriptDeclaration.read(node, file: file, diagnostics: &diagnostics)
                if diagnostics.count > before { valid = false }
            }
            var queueSize = Self.defaultQueueSize
            var onFull = OnFull.block
            var spoolLimit = Self.defaultSpoolLimit
            if let queue = element["queue"] {
                if let queueMembers = queue.members {
                    for member in queueMembers {
                        switch member.key {
                        case "size":
                            if case .scalar(.int(let size)) = member.value.kind, size > 0, size <= Self.maximumQueueSize {
                                queueSize = size
                            } else {
                                // The queue's slots are allocated up front: a typo must not ask for terabytes.
                                fail("queue.size must be an integer from 1 to \(Self.maximumQueueSize)", member.value.location)
                            }
                        case "on_full":
                            if let value = member.value.string.flatMap(OnFull.init(rawValue:)) {
                                onFull = value
                            } else {
                                fail(
                                    "queue.on_full must be one of: \(OnFull.allCases.map(\.rawValue).joined(separator: ", "))",
                                    member.value.location)
                            }
                        case "spool_limit":
                            if let bytes = ByteSizeText.bytes(member.value.json), bytes > 0 {
                                spoolLimit = bytes
                            } else {
                                fail("queue.spool_limit must be a size such as 512MB or 1GiB", member.value.location)
                            }
                        default:
                            fail(
                                "unknown key '\(member.key)' in queue (expected: \(RouteFileSchema.names(RouteFileSchema.queueKeys).joined(separator: ", ")))",
                                member.keyLocation)
                        }
                    }
                } else {
                    fail("'queue' must be a mapping such as { size: 1024, on_full: block }", queue.location)
                }
            }
            var delivery = Delivery.atMostOnce
            if let node = element["delivery"] {
                if let value = node.string.flatMap(Delivery.init(rawValue:)) {
                    delivery = value
                } else {
                    fail("'delivery' must be one of: \(Delivery.allCases.map(\.rawValue).joined(separator: ", "))", node.location)
                }
            }
            if onFull == .spool, delivery != .atLeastOnce {
                fail(
                    "queue.on_full: spool keeps the backlog in the durable spool, which needs 'delivery: at-least-once' on the route",
                    element["queue"]?["on_full"]?.location ?? element.location)
            }
            var retry = RetryPolicy.standard
            if let node = element["retry"] {
                if delivery != .atLeastOnce {
                    fail("'retry' applies to 'delivery: at-least-once' routes only", node.location)
                }
                if let members = node.members {
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
                                "unknown key '\(member.key)' in retry (expected: \(RouteFileSchema.names(RouteFileSchema.retryKeys).joined(separator: ", ")))",
                                member.keyLocation)
                        }
                    }
                    if retry.maxBackoff < retry.backoff { retry.maxBackoff = retry.backoff }
                } else {
                    fail("'retry' must be a mapping such as { attempts: 5, backoff: 200ms, max_backoff: 30s }", node.location)
                }
            }
            var dedupeWindow: UInt64?
            var dedupeKey: Located<String>?
            if let node = element["dedupe"] {
                if delivery != .atLeastOnce {
                    fail("'dedupe' applies to 'delivery: at-least-once' routes only", node.location)
                } else if let members = node.members {
                    dedupeWindow = Self.defaultDedupeWindow
                    for member in members {
                        switch member.key {
                        case "key":
                            if let text = member.value.string, !text.isEmpty {
                                dedupeKey = Located(text, at: member.value.location)
                            } else {
                                fail("dedupe.key must be a template such as \"{{body.message_id}}\"", member.value.location)
                            }
                        case "window":
                            if let nanos = DurationText.nanoseconds(member.value.json), nanos > 0 {
                                dedupeWindow = nanos
                            } else {
                                fail("dedupe.window must be a duration such as 10m (how long keys are remembered)", member.value.location)
                            }
                        default:
                            fail(
                                "unknown key '\(member.key)' in dedupe (expected: \(RouteFileSchema.names(RouteFileSchema.dedupeKeys).joined(separator: ", ")))",
                                member.keyLocation)
                        }
                    }
                } else if let nanos = DurationText.nanoseconds(node.json), nanos > 0 {
                    dedupeWindow = nanos
                } else {
                    fail(
                        "'dedupe' must be a duration such as 10m (how long envelope ids are remembered) or { key: TEMPLATE, window: 10m }",
                        node.location)
                }
            }
            var allowLoops = false
            if let loop = element["loop"] {
                switch loop.string {
                case "allow": allowLoops = true
                case "prevent": allowLoops = false
                default: fail("'loop' must be 'prevent' (the default) or 'allow'", loop.location)
                }
            }
            guard valid, let from else { continue }
            config.routes.append(
                RouteDeclaration(
                    name: name, location: element.location, from: from, to: to, when: when, map: map, template: template,
                    outputType: outputType, contentType: contentType, queueSize: queueSize, onFull: onFull, allowLoops: allowLoops,
                    delivery: delivery, retry: retry, dedupeWindow: dedupeWindow, dedupeKey: dedupeKey, spoolLimit: spoolLimit,
                    script: script
                )
            )
        }
    }
}
