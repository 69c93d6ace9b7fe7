internal import SwitchyardCore

extension ConfigLoader {
    /// `types:`: user-defined envelope types, each a name and the JSON Schema of its body.
    /// Types that come from a plugin's own type language (Qeo's QDM files) are not written
    /// here: the plugin derives them from its instance's configuration (ABI `describe`).
    func mergeTypes(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        guard let elements = node.elements else {
            diagnostics.append(Diagnostic("'types' must be a list of { name, schema } entries", at: node.location))
            return
        }
        for element in elements {
            if let qdm = element["qdm"] {
                // Route files written before the qeo plugin described its own types.
                diagnostics.append(
                    Diagnostic(
                        "'qdm' belongs to the qeo instance, not to 'types': remove this entry; the instance's own 'qdm:' files give its types, named qeo.<QDM name> (such as qeo.org.qeo.sample.simplechat.ChatMessage)",
                        at: qdm.location))
                continue
            }
            guard element.members != nil, let name = element["name"]?.string, !name.isEmpty else {
                diagnostics.append(
                    Diagnostic("a type needs a 'name' (and a 'schema' JSON Schema of its body)", at: element.location))
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
                let place = element["schema"].map { $0.location(ofPointer: error.pointer) }
                diagnostics.append(Diagnostic("type '\(name)': \(error)", at: place ?? element.location))
                continue
            }
            config.types.append(TypeDeclaration(name: name, schema: schema, location: element.location))
        }
    }
}
