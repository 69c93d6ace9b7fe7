internal import SwitchyardCore
internal import SwitchyardStore

extension RouteFileMerger {
    /// `store: { url: "${SWITCHYARD_STORE_URL}" }`: a PostgreSQL URL, whose password (if it
    /// has one) comes from the environment. Errors never repeat the URL: it may hold one.
    mutating func mergeStore(_ node: ConfigNode) {
        guard let members = node.members else {
            diagnostics.append(Diagnostic(#"'store' must be a mapping such as { url: "${SWITCHYARD_STORE_URL}" }"#, at: node.location))
            return
        }
        for member in members {
            guard member.key == "url" else {
                diagnostics.append(
                    Diagnostic(
                        RouteFileSchema.unknownKey(member.key, in: "store", expected: RouteFileSchema.storeKeys),
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

    /// `admin: { listen, token, allowed_hosts, max_connections, ... }`: the admin API's socket,
    /// who may use it, and how many connections it takes.
    mutating func mergeAdmin(_ node: ConfigNode) {
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
                        RouteFileSchema.unknownKey(member.key, in: "admin", expected: RouteFileSchema.adminKeys),
                        at: member.keyLocation))
            }
        }
    }
}
