import QeoQDM
import SwitchyardCore
import SwitchyardPluginKit

/// The types and topics an instance's QDM files give it: what `describe` reports to the
/// router before anything starts, and what the instance reads and writes once it runs.
struct QeoTopics: Sendable {
    /// Every struct of the files and their includes.
    var model: QDMModel
    /// The topics of `read`, in the order written.
    var read: [QDMStruct]
    /// The topics of `write`, in the order written.
    var write: [QDMStruct]

    /// Loads the `qdm` files and resolves `read` and `write`. Errors start with the JSON
    /// Pointer of the value concerned (`/qdm/1: …`, `/read/0: …`), which the router turns
    /// into the route file's line and column.
    init(config: JSONValue) throws(PluginError) {
        let qdm = config["qdm"]
        let files = qdm?.stringValue.map { [$0] } ?? (qdm?.arrayValue ?? []).compactMap(\.stringValue)
        guard !files.isEmpty else { throw PluginError("/qdm: give the QDM files of the types (relative to the route file's folder)") }
        do {
            model = try QDMParser.load(files)
        } catch {
            // Point at the file the error is in when it is one of those listed (not an include).
            let index = qdm?.arrayValue == nil ? nil : error.location.flatMap { location in files.firstIndex(of: location.file) }
            throw PluginError("/qdm\(index.map { "/\($0)" } ?? ""): \(error)")
        }
        let model = model
        func topics(_ key: String) throws(PluginError) -> [QDMStruct] {
            var items: [QDMStruct] = []
            for (index, entry) in (config[key]?.arrayValue ?? []).enumerated() {
                guard let name = entry.stringValue else { throw PluginError("/\(key)/\(index): entries are QDM type names") }
                // `qeo.` + the QDM name is the envelope type; the QDM name is the topic's.
                let qdmName = Self.qdmName(of: name, in: model)
                guard let item = model.structs[qdmName] else {
                    let known = model.topics.map(\.name).joined(separator: ", ")
                    throw PluginError("/\(key)/\(index): \(name) is not a type of the QDM files (topics there: \(known))")
                }
                guard item.behavior != nil else {
                    throw PluginError(
                        "/\(key)/\(index): \(name) has no behavior=\"event\" or \"state\" in \(item.location): it is not a topic")
                }
                items.append(item)
            }
            return items
        }
        read = try topics("read")
        write = try topics("write")
        guard !read.isEmpty || !write.isEmpty else { throw PluginError("nothing to do: list topics under read, write or both") }
    }

    /// The envelope type of a QDM struct: the plugin's name, a dot and the QDM name
    /// (`qeo.org.qeo.sample.simplechat.ChatMessage`), as every type an instance adds.
    static func envelopeType(of qdmName: String) -> String { "qeo." + qdmName }

    /// The QDM name of `typeName`: the name itself when the model has a struct of that name,
    /// else the name without its `qeo.` (an envelope type).
    static func qdmName(of typeName: String, in model: QDMModel) -> String {
        guard model.structs[typeName] == nil, typeName.hasPrefix("qeo.") else { return typeName }
        return String(typeName.dropFirst(4))
    }

    /// The instance's description: every struct of its files as a type, and each port
    /// typed by the topics that flow through it.
    var description: InstanceDescription {
        var types: [String: JSONValue] = [:]
        for name in model.structs.keys { types[Self.envelopeType(of: name)] = model.schema(of: name) }
        func typed(_ port: PortDeclaration, _ topics: [QDMStruct], plus extra: [String] = []) -> PortDeclaration {
            guard !topics.isEmpty else { return port }
            var typed = port
            typed.types = topics.map { Self.envelopeType(of: $0.name) } + extra
            return typed
        }
        let ports = QeoPlugin.manifest.ports.map { port in
            switch port.name {
            case QeoPlugin.eventsPort: typed(port, read.filter { $0.behavior == .event })
            case QeoPlugin.changesPort: typed(port, read.filter { $0.behavior == .state }, plus: [QeoPlugin.removedType])
            case QeoPlugin.writePort: typed(port, write, plus: [QeoPlugin.removeType])
            default: port
            }
        }
        return InstanceDescription(ports: ports, types: types)
    }
}
