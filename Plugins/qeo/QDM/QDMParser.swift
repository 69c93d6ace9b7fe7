import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Reads Qeo Data Model files (the `http://www.qeo.org/formal/2013/Qeo_Data_Model` schema):
/// `<types>` with `<include file>`, `<module name="a::b">` holding `<struct name behavior>`
/// with `<member name type key nonBasicTypeName sequenceMaxLength>` and `<enum>` with
/// `<enumerator>`. Includes are read once, relative to the including file; type references
/// resolve in the member's module first, then as full names.
public enum QDMParser {
    /// Parses `files` and everything they include into one model, checked: every reference
    /// resolves, no struct contains itself, names are unique.
    public static func load(_ files: [String]) throws(QDMError) -> QDMModel {
        var reader = Reader()
        for file in files { try reader.read(file, includedFrom: nil) }
        return try reader.resolve()
    }

    /// Parses QDM text (for tests and tools); `file` names it in errors and includes resolve
    /// relative to its directory.
    public static func parse(_ text: String, file: String = "<qdm>") throws(QDMError) -> QDMModel {
        var reader = Reader()
        try reader.read(Data(text.utf8), file: file)
        return try reader.resolve()
    }

    /// A member as written, before its type is resolved.
    struct RawMember {
        var name: String
        var type: String
        var nonBasicTypeName: String?
        var isKey: Bool
        var isSequence: Bool
        var location: QDMLocation
    }

    /// A struct as written, its members' types not yet resolved.
    struct RawStruct {
        var name: String
        var module: String
        var behavior: QDMStruct.Behavior?
        var members: [RawMember]
        var location: QDMLocation
    }

    struct Reader {
        var structs: [String: RawStruct] = [:]
        var enums: [String: QDMEnum] = [:]
        var seenFiles: Set<String> = []

        mutating func read(_ file: String, includedFrom location: QDMLocation?) throws(QDMError) {
            let path = URL(fileURLWithPath: file).standardizedFileURL.path
            guard seenFiles.insert(path).inserted else { return }
            try read(QDMParser.readFile(path, includedFrom: location), file: file)
        }

        mutating func read(_ data: Data, file: String) throws(QDMError) {
            try QDMParser.screen(data, file: file)
            let delegate = QDMElementCollector(file: file)
            let parser = XMLParser(data: data)
            parser.delegate = delegate
            parser.shouldProcessNamespaces = true
            let parsed = parser.parse()
            if let error = delegate.error { throw error }
            guard parsed, delegate.depth == 0 else {
                let reason = parser.parserError.map { "\($0.localizedDescription)" } ?? "not well-formed XML (an element is not closed)"
                throw QDMError("not a QDM file: \(reason)", at: QDMLocation(file: file, line: parser.lineNumber))
            }
            guard delegate.sawTypes else {
                throw QDMError("not a QDM file: the root element is not <types>", at: QDMLocation(file: file, line: 1))
            }
            let directory = URL(fileURLWithPath: file).deletingLastPathComponent()
            for include in delegate.includes {
                try read(directory.appendingPathComponent(include.file).path, includedFrom: include.location)
            }
            for item in delegate.structs {
                let name = item.module.isEmpty ? item.name : item.module + "." + item.name
                if let other = structs[name]?.location ?? enums[name]?.location {
                    throw QDMError("\(name) is already defined at \(other)", at: item.location)
                }
                structs[name] = item
            }
            for item in delegate.enums {
                if let other = structs[item.name]?.location ?? enums[item.name]?.location {
                    throw QDMError("\(item.name) is already defined at \(other)", at: item.location)
                }
                enums[item.name] = item
            }
        }

        func resolve() throws(QDMError) -> QDMModel {
            var model = QDMModel(enums: enums)
            for (name, raw) in structs {
                var members: [QDMMember] = []
                for member in raw.members {
                    var kind = try kind(of: member, in: raw.module)
                    if member.isSequence { kind = .sequence(kind) }
                    if member.isKey, case .sequence = kind {
                        throw QDMError("key member \(member.name) cannot be a sequence", at: member.location)
                    }
                    members.append(QDMMember(name: member.name, kind: kind, isKey: member.isKey, location: member.location))
                }
                model.structs[name] = QDMStruct(name: name, behavior: raw.behavior, members: members, location: raw.location)
            }
            var path: [String] = []
            var checked: Set<String> = []
            for name in model.structs.keys.sorted() { try checkNoCycle(name, in: model, path: &path, checked: &checked) }
            try QDMParser.checkExpandedSize(of: model)
            return model
        }

        private func kind(of member: RawMember, in module: String) throws(QDMError) -> QDMMember.Kind {
            switch member.type {
            case "boolean": return .boolean
            case "byte": return .byte
            case "int16": return .int16
            case "int32": return .int32
            case "int64": return .int64
            case "float32": return .float32
            case "string": return .string
            case "nonBasic":
                guard let reference = member.nonBasicTypeName, !reference.isEmpty else {
                    throw QDMError("member \(member.name) has type=\"nonBasic\" but no nonBasicTypeName", at: member.location)
                }
                let dotted = reference.replacingOccurrences(of: "::", with: ".")
                let candidates = module.isEmpty ? [dotted] : [module + "." + dotted, dotted]
                for candidate in candidates {
                    if structs[candidate] != nil { return .structure(candidate) }
                    if enums[candidate] != nil { return .enumeration(candidate) }
                }
                throw QDMError("member \(member.name): unknown type \(reference)", at: member.location)
            default:
                throw QDMError(
                    "member \(member.name): type \"\(member.type)\" is not boolean, byte, int16, int32, int64, float32, string or nonBasic",
                    at: member.location)
            }
        }

        /// Depth first, each struct once (a struct used by many is not walked again), at most
        /// ``QDMParser/maximumNestingDepth`` deep so the walk's recursion is bounded.
        private func checkNoCycle(_ name: String, in model: QDMModel, path: inout [String], checked: inout Set<String>) throws(QDMError) {
            guard !checked.contains(name), let item = model.structs[name] else { return }
            if path.contains(name) {
                throw QDMError("\(name) contains itself: \((path + [name]).joined(separator: " → "))", at: item.location)
            }
            guard path.count < QDMParser.maximumNestingDepth else {
                throw QDMError("\(name) is nested more than \(QDMParser.maximumNestingDepth) structs deep", at: item.location)
            }
            path.append(name)
            for member in item.members {
                var kind = member.kind
                if case .sequence(let element) = kind { kind = element }
                if case .structure(let inner) = kind { try checkNoCycle(inner, in: model, path: &path, checked: &checked) }
            }
            path.removeLast()
            checked.insert(name)
        }
    }
}
