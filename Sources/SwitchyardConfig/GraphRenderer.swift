/// Renders the routing graph for diagram tools: nodes are ports, grouped by instance; edges are
/// routes; an iiidea is a node of its own between its trigger and its action, named with its
/// service piece.
public enum GraphRenderer {
    /// A Mermaid flowchart. `portTypes` (by `instance.port`) adds each port's types to its box.
    public static func mermaid(_ config: GraphConfig, portTypes: [String: [String]] = [:]) -> String {
        var lines = ["flowchart LR"]
        for instance in config.instances {
            lines.append("  subgraph \(identifier(instance.name))[\"\(escape(instance.name)) (\(escape(instance.plugin.value)))\"]")
            for port in portsUsed(by: instance.name, in: config) {
                lines.append("    \(identifier(port.description))[\"\(escape(portLabel(port, portTypes, lineBreak: "<br/>")))\"]")
            }
            lines.append("  end")
        }
        for route in config.routes {
            for target in route.to {
                let label = escape(route.name + (route.when.map { " when \($0.value)" } ?? ""))
                lines.append("  \(identifier(route.from.value.description)) -->|\"\(label)\"| \(identifier(target.value.description))")
            }
        }
        for iiidea in config.iiideas {
            let node = "iiidea_" + identifier(iiidea.id)
            lines.append("  \(node){{\"\(escape(iiideaLabel(iiidea, lineBreak: "<br/>")))\"}}")
            let when = iiidea.when.map { "|\"when \(escape($0.value))\"|" } ?? ""
            lines.append("  \(identifier(iiidea.trigger.value.description)) -->\(when) \(node)")
            lines.append("  \(node) --> \(identifier(iiidea.action.value.description))")
        }
        return lines.joined(separator: "\n")
    }

    /// A Graphviz digraph. `portTypes` (by `instance.port`) adds each port's types to its box.
    public static func dot(_ config: GraphConfig, portTypes: [String: [String]] = [:]) -> String {
        var lines = ["digraph switchyard {", "  rankdir=LR;", "  node [shape=box];"]
        for instance in config.instances {
            lines.append("  subgraph \"cluster_\(dotEscape(instance.name))\" {")
            lines.append("    label=\"\(dotEscape("\(instance.name) (\(instance.plugin.value))"))\";")
            for port in portsUsed(by: instance.name, in: config) {
                lines.append(
                    "    \"\(dotEscape(port.description))\" [label=\"\(dotEscape(portLabel(port, portTypes, lineBreak: "\\n")))\"];")
            }
            lines.append("  }")
        }
        for route in config.routes {
            for target in route.to {
                let label = route.name + (route.when.map { "\\nwhen \($0.value)" } ?? "")
                lines.append(
                    "  \"\(dotEscape(route.from.value.description))\" -> \"\(dotEscape(target.value.description))\" [label=\"\(dotEscape(label))\"];"
                )
            }
        }
        for iiidea in config.iiideas {
            let node = dotEscape("iiidea \(iiidea.id)")
            lines.append("  \"\(node)\" [shape=hexagon, label=\"\(dotEscape(iiideaLabel(iiidea, lineBreak: "\\n")))\"];")
            let when = iiidea.when.map { " [label=\"\(dotEscape("when \($0.value)"))\"]" } ?? ""
            lines.append("  \"\(dotEscape(iiidea.trigger.value.description))\" -> \"\(node)\"\(when);")
            lines.append("  \"\(node)\" -> \"\(dotEscape(iiidea.action.value.description))\";")
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    /// The ports of `instance` that routes and iiideas use, in the order they are first used.
    static func portsUsed(by instance: String, in config: GraphConfig) -> [PortReference] {
        var seen: [PortReference] = []
        let references =
            config.routes.flatMap { [$0.from] + $0.to }
            + config.iiideas.flatMap { [$0.trigger, $0.action] + ($0.remote.map { [$0] } ?? []) }
        for reference in references where reference.value.instance == instance && !seen.contains(reference.value) {
            seen.append(reference.value)
        }
        return seen
    }

    static func portLabel(_ port: PortReference, _ types: [String: [String]], lineBreak: String) -> String {
        guard let names = types[port.description], !names.isEmpty else { return port.port }
        return port.port + lineBreak + names.joined(separator: ", ")
    }

    static func iiideaLabel(_ iiidea: IiideaDeclaration, lineBreak: String) -> String {
        "iiidea \(iiidea.id)" + lineBreak + "service: \(iiidea.piece.value)" + (iiidea.enabledByDefault ? "" : lineBreak + "(off)")
    }

    static func identifier(_ text: String) -> String {
        String(text.map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    /// Mermaid writes a quote inside a label as an entity.
    static func escape(_ text: String) -> String {
        text.reduce(into: "") { output, character in output += character == "\"" ? "#quot;" : String(character) }
    }

    /// DOT escapes a quote with a backslash (`\n` line breaks are kept).
    static func dotEscape(_ text: String) -> String {
        text.reduce(into: "") { output, character in output += character == "\"" ? "\\\"" : String(character) }
    }
}
