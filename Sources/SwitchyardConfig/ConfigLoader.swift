import QeoQDM
public import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads route files (one file, or every `*.yaml`/`*.yml` of a directory, merged) into a
/// ``GraphConfig``, collecting every problem with its position rather than stopping at the
/// first.
public struct ConfigLoader: Sendable {
    /// Default queue capacity per route.
    public static let defaultQueueSize = 1024
    /// Default bytes an `on_full: spool` route may hold on disk: 1 GiB.
    public static let defaultSpoolLimit = 1 << 30
    /// Runs kept per iiidea unless `iiidea_history.keep` says otherwise.
    public static let defaultIiideaHistory = 1000
    /// Where the spool lives unless `spool.path` says otherwise.
    public static let defaultSpoolPath = "state/spool.db"

    /// Where `${VAR}` values come from.
    public var environment: [String: String]

    /// Creates a loader.
    public init(environment: [String: String]) { self.environment = environment }

    /// The route files at `path`: the file itself, or the sorted YAML files of a directory.
    public static func routeFiles(at path: String) throws(Diagnostic) -> [String] {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw Diagnostic("cannot read '\(path)': \(String(cString: strerror(errno)))", at: nil)
        }
        guard (status.st_mode & S_IFMT) == S_IFDIR else { return [path] }
        guard let directory = opendir(path) else {
            throw Diagnostic("cannot open directory '\(path)': \(String(cString: strerror(errno)))", at: nil)
        }
        defer { closedir(directory) }
        var files: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if (name.hasSuffix(".yaml") || name.hasSuffix(".yml")) && !name.hasPrefix(".") {
                files.append(path.hasSuffix("/") ? path + name : path + "/" + name)
            }
        }
        guard !files.isEmpty else { throw Diagnostic("no route files (*.yaml) in '\(path)'", at: nil) }
        return files.sorted()
    }

    /// Loads and merges the route files at `path`.
    public func load(path: String) -> (GraphConfig, [Diagnostic]) {
        let files: [String]
        do {
            files = try Self.routeFiles(at: path)
        } catch {
            return (GraphConfig(), [error])
        }
        var sources: [(file: String, text: String)] = []
        var diagnostics: [Diagnostic] = []
        for file in files {
            do {
                sources.append((file, try Self.readText(file)))
            } catch {
                diagnostics.append(error)
            }
        }
        let (config, more) = load(sources: sources)
        var merged = config
        merged.files = files
        return (merged, diagnostics + more)
    }

    /// Loads and merges route files given as text (what tests use).
    public func load(sources: [(file: String, text: String)]) -> (GraphConfig, [Diagnostic]) {
        var config = GraphConfig()
        var diagnostics: [Diagnostic] = []
        let reader = YAMLReader(environment: environment)
        for (file, text) in sources {
            config.files.append(file)
            guard let root = reader.read(text, file: file, diagnostics: &diagnostics, secrets: &config.secrets) else { continue }
            merge(root, file: file, into: &config, diagnostics: &diagnostics)
        }
        return (config, diagnostics.map { $0.redacting(config.secrets) })
    }

    /// The largest `queue.size`: a route queue holds envelopes in memory.
    public static let maximumQueueSize = 1_048_576

    /// The largest route file read: a route file is configuration, and it is read whole.
    public static let maximumFileSize = 16 * 1024 * 1024

    static func readText(_ file: String) throws(Diagnostic) -> String {
        guard let handle = fopen(file, "rb") else {
            throw Diagnostic("cannot read '\(file)': \(String(cString: strerror(errno)))", at: nil)
        }
        defer { fclose(handle) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, handle)
            if count <= 0 { break }
            guard bytes.count + count <= maximumFileSize else {
                throw Diagnostic("'\(file)' is larger than \(maximumFileSize / (1024 * 1024)) MiB; route files are read whole", at: nil)
            }
            bytes.append(contentsOf: buffer[0..<count])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Diagnostic("'\(file)' is not UTF-8 text", at: nil)
        }
        return text
    }

    /// The levels `log_level:` accepts, those of swift-log.
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    private static let topLevelKeys = ["plugins", "spool", "admin", "types", "instances", "routes", "iiideas", "iiidea_history"]
    private static let routeKeys = [
        "name", "from", "to", "when", "map", "template", "type", "content_type", "queue", "loop", "delivery", "retry", "dedupe",
    ]

    private func merge(_ root: ConfigNode, file: String, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        if case .scalar(.null) = root.kind { return }  // an empty file
        guard let members = root.members else {
            diagnostics.append(
                Diagnostic("a route file must be a mapping with \(Self.topLevelKeys.joined(separator: ", "))", at: root.location))
            return
        }
        for member in members {
            switch member.key {
            case "plugins":
                mergePathSetting(
                    member.value, section: "plugins", key: "dir", example: "Plugins", what: "a directory path", into: \.pluginsDirectory,
                    config: &config, diagnostics: &diagnostics)
            case "spool":
                var pathOnly = member.value
                if case .mapping(let settings) = member.value.kind {
                    for setting in settings where setting.key == "sync" {
                        guard let mode = setting.value.string.flatMap(SpoolSync.init(rawValue:)) else {
                            diagnostics.append(Diagnostic("spool.sync must be full or normal", at: setting.value.location))
                            continue
                        }
                        config.spoolSync = Located(mode, at: setting.value.location)
                    }
                    pathOnly.kind = .mapping(settings.filter { $0.key != "sync" })
                }
                mergePathSetting(
                    pathOnly, section: "spool", key: "path", example: "state/spool.db", what: "a file path", into: \.spoolPath,
                    config: &config, diagnostics: &diagnostics, otherKeys: ["sync"])
            case "admin": mergeAdmin(member.value, into: &config, diagnostics: &diagnostics)
            case "iiideas": mergeIiideas(member.value, into: &config, diagnostics: &diagnostics)
            case "iiidea_history":
                if case .scalar(.int(let keep)) = member.value["keep"]?.kind, keep > 0, member.value.members?.count == 1 {
                    config.iiideaHistory = keep
                } else {
                    diagnostics.append(
                        Diagnostic("iiidea_history must be { keep: N } with N > 0 (runs kept per iiidea)", at: member.value.location))
                }
            case "types": mergeTypes(member.value, into: &config, diagnostics: &diagnostics)
            case "instances": mergeInstances(member.value, into: &config, diagnostics: &diagnostics)
            case "routes": mergeRoutes(member.value, file: file, into: &config, diagnostics: &diagnostics)
            default:
                diagnostics.append(
                    Diagnostic(
                        "unknown key '\(member.key)' (expected one of: \(Self.topLevelKeys.joined(separator: ", ")))",
                        at: member.keyLocation)
                )
            }
        }
    }

    /// `plugins: { dir: ... }` and `spool: { path: ... }`: a section with one path setting,
    /// which every route file that sets it must set to the same value.
    private func mergePathSetting(
        _ node: ConfigNode, section: String, key: String, example: String, what: String,
        into setting: WritableKeyPath<GraphConfig, Located<String>?>, config: inout GraphConfig, diagnostics: inout [Diagnostic],
        otherKeys: [String] = []
    ) {
        guard let members = node.members else {
            diagnostics.append(Diagnostic("'\(section)' must be a mapping such as { \(key): \(example) }", at: node.location))
            return
        }
        for member in members {
            guard member.key == key else {
                let expected = ([key] + otherKeys).joined(separator: ", ")
                diagnostics.append(Diagnostic("unknown key '\(member.key)' in \(section) (expected: \(expected))", at: member.keyLocation))
                continue
            }
            guard let value = member.value.string, !value.isEmpty else {
                diagnostics.append(Diagnostic("\(section).\(key) must be \(what)", at: member.value.location))
                continue
            }
            if let previous = config[keyPath: setting], previous.value != value {
                diagnostics.append(
                    Diagnostic(
                        "\(section).\(key) is set to '\(previous.value)' at \(previous.location) and to '\(value)' here",
                        at: member.value.location))
                continue
            }
            config[keyPath: setting] = Located(value, at: member.value.location)
        }
    }

    private func mergeAdmin(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let members = node.members else {
            diagnostics.append(Diagnostic("'admin' must be a mapping such as { listen: 127.0.0.1:9180 }", at: node.location))
            return
        }
        for member in members {
            if member.key == "allowed_hosts" {
                let names = member.value.elements?.compactMap(\.scalarText).filter { !$0.isEmpty }
                guard let names, names.count == member.value.elements?.count else {
                    diagnostics.append(
                        Diagnostic(
                            "admin.allowed_hosts must be a list of host names, such as [router.example.net]", at: member.value.location))
                    continue
                }
                config.adminAllowedHosts = names.map { $0.lowercased() }
                continue
            }
            guard let value = member.value.scalarText, member.value.members == nil, member.value.elements == nil, !value.isEmpty else {
                diagnostics.append(Diagnostic("admin.\(member.key) must be a string", at: member.value.location))
                continue
            }
            switch member.key {
            case "listen":
                let port = value.split(separator: ":").last.flatMap { Int($0) }
                guard let port, (0...65535).contains(port) else {
                    diagnostics.append(Diagnostic("admin.listen must be host:port, such as 127.0.0.1:9180", at: member.value.location))
                    continue
                }
                config.adminListen = Located(value, at: member.value.location)
            case "token":
                config.adminToken = Located(value, at: member.value.location)
            default:
                diagnostics.append(
                    Diagnostic("unknown key '\(member.key)' in admin (expected: listen, token, allowed_hosts)", at: member.keyLocation))
            }
        }
    }

    private static let iiideaKeys = ["id", "title", "trigger", "service", "action", "remote", "enabled"]

    private func mergeIiideas(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
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

    private func mergeTypes(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'types' must be a list of { name, schema } entries", at: node.location))
            return
        }
        for element in elements {
            if let qdm = element["qdm"] {
                mergeQDM(qdm, element: element, into: &config, diagnostics: &diagnostics)
                continue
            }
            guard element.members != nil, let name = element["name"]?.string, !name.isEmpty else {
                diagnostics.append(
                    Diagnostic("a type needs a 'name' (and a 'schema' JSON Schema of its body), or 'qdm' QDM files", at: element.location))
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
                let place = element["schema"].map { $0.location(ofPath: error.pointer.split(separator: "/").joined(separator: ".")) }
                diagnostics.append(Diagnostic("type '\(name)': \(error)", at: place ?? element.location))
                continue
            }
            config.types.append(TypeDeclaration(name: name, schema: schema, location: element.location))
        }
    }

    /// `- qdm: FILE` or `- qdm: [FILES]`: every struct of those Qeo Data Model files (and their
    /// includes) becomes a type named as Qeo names it (`org.qeo.sample.simplechat.ChatMessage`).
    /// Paths are relative to the working directory, like the plugin folder.
    private func mergeQDM(_ node: ConfigNode, element: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        for member in element.members ?? [] where member.key != "qdm" {
            diagnostics.append(Diagnostic("unknown key '\(member.key)' beside 'qdm' (a list of QDM files)", at: member.keyLocation))
        }
        let files = node.string.map { [$0] } ?? (node.elements ?? []).compactMap(\.string)
        guard !files.isEmpty else {
            diagnostics.append(Diagnostic("'qdm' must be a QDM file or a list of them", at: node.location))
            return
        }
        do {
            let model = try QDMParser.load(files)
            for name in model.structs.keys.sorted() {
                config.types.append(TypeDeclaration(name: name, schema: model.schema(of: name), location: element.location))
            }
        } catch {
            diagnostics.append(Diagnostic("QDM: \(error)", at: node.location))
        }
    }

    private func mergeInstances(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
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
            let rest = fields.filter { $0.key != "plugin" && $0.key != "log_level" }
            let settings = ConfigNode(
                kind: .mapping(rest), location: member.value.location, isSecret: rest.contains(where: \.value.isSecret))
            config.instances.append(
                InstanceDeclaration(
                    name: name, location: member.keyLocation, plugin: Located(plugin, at: pluginNode.location), config: settings,
                    logLevel: logLevel)
            )
        }
    }

    private func mergeRoutes(_ node: ConfigNode, file: String, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
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
                            fail("unknown key '\(member.key)' in queue (expected: size, on_full, spool_limit)", member.keyLocation)
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
                            fail("unknown key '\(member.key)' in retry (expected: attempts, backoff, max_backoff)", member.keyLocation)
                        }
                    }
                    if retry.maxBackoff < retry.backoff { retry.maxBackoff = retry.backoff }
                } else {
                    fail("'retry' must be a mapping such as { attempts: 5, backoff: 200ms, max_backoff: 30s }", node.location)
                }
            }
            var dedupeWindow: UInt64?
            if let node = element["dedupe"] {
                if delivery != .atLeastOnce {
                    fail("'dedupe' applies to 'delivery: at-least-once' routes only", node.location)
                } else if let nanos = DurationText.nanoseconds(node.json), nanos > 0 {
                    dedupeWindow = nanos
                } else {
                    fail("'dedupe' must be a duration such as 10m (how long envelope ids are remembered)", node.location)
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
                    delivery: delivery, retry: retry, dedupeWindow: dedupeWindow, spoolLimit: spoolLimit
                )
            )
        }
    }

    static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
    }

    static func baseName(_ path: String) -> String {
        String(path.split(separator: "/").last ?? Substring(path))
    }
}
