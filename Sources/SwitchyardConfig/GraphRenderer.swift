/// Renders the routing graph for diagram tools: nodes are ports, edges are routes.
public enum GraphRenderer {
    /// A Mermaid flowchart.
    public static func mermaid(_ config: GraphConfig) -> String {
        var lines = ["flowchart LR"]
        for instance in config.instances {
            let ports = portsUsed(by: instance.name, in: config)
            lines.append("  subgraph \(identifier(instance.name))[\"\(instance.name) (\(instance.plugin.value))\"]")
            for port in ports { lines.append("    \(identifier(port.description))[\"\(port.port)\"]") }
            lines.append("  end")
        }
        for route in config.routes {
            for target in route.to {
                let label = escape(route.name + (route.when.map { " when \($0.value)" } ?? ""))
                lines.append("  \(identifier(route.from.value.description)) -->|\"\(label)\"| \(identifier(target.value.description))")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A Graphviz digraph.
    public static func dot(_ config: GraphConfig) -> String {
        var lines = ["digraph switchyard {", "  rankdir=LR;", "  node [shape=box];"]
        for instance in config.instances {
            lines.append("  subgraph \"cluster_\(instance.name)\" {")
            lines.append("    label=\"\(instance.name) (\(instance.plugin.value))\";")
            for port in portsUsed(by: instance.name, in: config) {
                lines.append("    \"\(port)\" [label=\"\(port.port)\"];")
            }
            lines.append("  }")
        }
        for route in config.routes {
            for target in route.to {
                let label = route.name + (route.when.map { "\\nwhen \($0.value)" } ?? "")
                lines.append("  \"\(route.from.value)\" -> \"\(target.value)\" [label=\"\(dotEscape(label))\"];")
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    static func portsUsed(by instance: String, in config: GraphConfig) -> [PortReference] {
        var seen: [PortReference] = []
        for route in config.routes {
            for reference in [route.from] + route.to where reference.value.instance == instance && !seen.contains(reference.value) {
                seen.append(reference.value)
            }
        }
        return seen
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
