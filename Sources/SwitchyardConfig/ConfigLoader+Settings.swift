internal import SwitchyardCore
internal import SwitchyardStore

extension ConfigLoader {
    /// `plugins: { dir: ... }` and `spool: { path: ... }`: a section with one path setting,
    /// which every route file that sets it must set to the same place (a relative path is
    /// taken from the folder of its file).
    func mergePathSetting(
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

    /// `store: { url: "${SWITCHYARD_STORE_URL}" }`: a PostgreSQL URL, whose password (if it
    /// has one) comes from the environment. Errors never repeat the URL: it may hold one.
    func mergeStore(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let members = node.members else {
            diagnostics.append(Diagnostic(#"'store' must be a mapping such as { url: "${SWITCHYARD_STORE_URL}" }"#, at: node.location))
            return
        }
        for member in members {
            guard member.key == "url" else {
                diagnostics.append(
                    Diagnostic(
                        "unknown key '\(member.key)' in store (expected: \(RouteFileSchema.names(RouteFileSchema.storeKeys).joined(separator: ", ")))",
                        at: member.keyLocation))
                continue
            }
            guard let value = member.value.string, !value.isEmpty else {
                diagnostics.append(Diagnostic("store.url must be a postgres:// URL", at: member.value.location))
                continue
            }
            let address: PostgresAddress
            do {
                address = try PostgresAddress(parsing: value)
            } catch {
                diagnostics.append(Diagnostic("store.url: \(error.detail)", at: member.value.location))
                continue
            }
            // The password itself must have come from a variable: `${VAR}` elsewhere in the
            // URL (the host, say) does not make a password written in the file a secret.
            if let password = address.password, !config.secrets.contains(where: { $0.contains(password) }) {
                diagnostics.append(
                    Diagnostic(
                        #"store.url carries a password, which must come from the environment: url: "${SWITCHYARD_STORE_URL}""#,
                        at: member.value.location))
                continue
            }
            if let previous = config.storeURL, previous.value != value {
                diagnostics.append(
                    Diagnostic("store.url is also set, to another database, at \(previous.location)", at: member.value.location))
                continue
            }
            config.storeURL = Located(value, at: member.value.location)
        }
    }

    func mergeAdmin(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
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
            case "max_connections", "max_connections_per_peer":
                guard let number = Int(value), (1...65536).contains(number) else {
                    diagnostics.append(Diagnostic("admin.\(member.key) must be a whole number from 1 to 65536", at: member.value.location))
                    continue
                }
                if member.key == "max_connections" {
                    config.adminConnections.maximumConnections = number
                } else {
                    config.adminConnections.maximumPerPeer = number
                }
            case "header_timeout":
                guard let nanoseconds = DurationText.nanoseconds(value), nanoseconds >= 1_000_000, nanoseconds <= 3_600_000_000_000 else {
                    diagnostics.append(
                        Diagnostic("admin.header_timeout must be a duration from 1ms to 1h, such as 10s", at: member.value.location))
                    continue
                }
                config.adminConnections.headerTimeout = .nanoseconds(Int64(nanoseconds))
            default:
                diagnostics.append(
                    Diagnostic(
                        "unknown key '\(member.key)' in admin (expected: \(RouteFileSchema.names(RouteFileSchema.adminKeys).joined(separator: ", ")))",
                        at: member.keyLocation))
            }
        }
    }
}
