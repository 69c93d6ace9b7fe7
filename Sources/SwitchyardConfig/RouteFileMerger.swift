internal import SwitchyardCore

/// One load's route files merged into one ``GraphConfig``: it owns the config being built and
/// the problems found so far, which every file of the load adds to. Apart from ``ConfigLoader``
/// (which owns the files and the environment) so that what a section means is decided in one
/// place, whichever way its text was obtained. It reads the router-wide settings itself and
/// hands routes and iiideas, which are most of a route file's rules, to their own decoders.
struct RouteFileMerger {
    /// The configuration of the files merged so far.
    var config = GraphConfig()
    /// Every problem found so far, in the order met.
    var diagnostics: [Diagnostic] = []

    /// The top-level keys, from ``RouteFileSchema`` (declared once).
    private static let topLevelKeys = RouteFileSchema.names(RouteFileSchema.topLevel)

    /// Adds the parsed route file `file` to ``config``.
    mutating func merge(_ root: ConfigNode, file: String) {
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
                    member.value, section: "plugins", key: "dir", example: "Plugins", what: "a directory path", into: \.pluginsDirectory)
            case "spool": mergeSpool(member.value)
            case "store": mergeStore(member.value)
            case "admin": mergeAdmin(member.value)
            case "tracing": TracingSettings.merge(member.value, into: &config, diagnostics: &diagnostics)
            case "iiideas": IiideaDecoder.decodeIiideas(member.value, into: &config.iiideas, diagnostics: &diagnostics)
            case "oauth": OAuthDeclaration.merge(member.value, into: &config, diagnostics: &diagnostics)
            case "iiidea_templates":
                IiideaDecoder.decodeTemplates(member.value, into: &config.iiideaTemplates, diagnostics: &diagnostics)
            case "iiidea_history":
                if case .scalar(.int(let keep)) = member.value["keep"]?.kind, keep > 0, member.value.members?.count == 1 {
                    config.iiideaHistory = keep
                } else {
                    diagnostics.append(
                        Diagnostic("iiidea_history must be { keep: N } with N > 0 (runs kept per iiidea)", at: member.value.location))
                }
            case "types": mergeTypes(member.value)
            case "instances": mergeInstances(member.value)
            case "routes": RouteDecoder.decodeRoutes(member.value, file: file, into: &config.routes, diagnostics: &diagnostics)
            default:
                diagnostics.append(
                    Diagnostic(
                        "unknown key '\(member.key)' (expected one of: \(Self.topLevelKeys.joined(separator: ", ")))",
                        at: member.keyLocation)
                )
            }
        }
    }

    /// `spool: { path: ..., sync: full }`: the path is a path setting like `plugins.dir`.
    private mutating func mergeSpool(_ node: ConfigNode) {
        var pathOnly = node
        if case .mapping(let settings) = node.kind {
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
            otherKeys: ["sync"])
    }

    /// `plugins: { dir: ... }` and `spool: { path: ... }`: a section with one path setting,
    /// which every route file that sets it must set to the same place (a relative path is
    /// taken from the folder of its file).
    private mutating func mergePathSetting(
        _ node: ConfigNode, section: String, key: String, example: String, what: String,
        into setting: WritableKeyPath<GraphConfig, Located<String>?>, otherKeys: [String] = []
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
            guard let written = member.value.string, !written.isEmpty else {
                diagnostics.append(Diagnostic("\(section).\(key) must be \(what)", at: member.value.location))
                continue
            }
            let value = RouteFilePath.resolve(written, besideFile: member.value.location.file)
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
}
