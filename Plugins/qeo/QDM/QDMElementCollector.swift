import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The SAX side of reading one QDM file: collects its includes, structs and enums with their
/// line numbers; the first error stops parsing. Separate from ``QDMParser``, which reads files
/// and resolves what they hold into a model, because this keeps the state of one walk over
/// one document (the open module, struct and enum, how deep it is).
final class QDMElementCollector: NSObject, XMLParserDelegate {
    let file: String
    var error: QDMError?
    var sawTypes = false
    var includes: [(file: String, location: QDMLocation)] = []
    var structs: [QDMParser.RawStruct] = []
    var enums: [QDMEnum] = []
    private var module = ""
    private var currentStruct: QDMParser.RawStruct?
    private var currentEnum: QDMEnum?
    /// Open elements: not 0 at the end means the XML was cut short or mis-nested.
    var depth = 0

    init(file: String) { self.file = file }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        depth += 1
        let location = QDMLocation(file: file, line: parser.lineNumber)
        func fail(_ reason: String) {
            guard error == nil else { return }
            error = QDMError(reason, at: location)
            parser.abortParsing()
        }
        func required(_ name: String) -> String? {
            guard let value = attributes[name], !value.isEmpty else {
                fail("<\(elementName)> needs a \(name) attribute")
                return nil
            }
            return value
        }
        if depth == 1 {
            guard elementName == "types" else { return fail("the root element is <\(elementName)>, not <types>") }
            sawTypes = true
            return
        }
        switch elementName {
        case "include":
            guard let included = required("file") else { return }
            includes.append((included, location))
        case "module":
            guard let name = required("name") else { return }
            guard Self.isScopedName(name) else { return fail("module name \"\(name)\" is not like a::b::c") }
            module = name.replacingOccurrences(of: "::", with: ".")
        case "struct":
            guard let name = required("name") else { return }
            var behavior: QDMStruct.Behavior?
            if let value = attributes["behavior"] {
                guard let known = QDMStruct.Behavior(rawValue: value) else {
                    return fail("struct \(name): behavior=\"\(value)\" is not \"event\" or \"state\"")
                }
                behavior = known
            }
            currentStruct = QDMParser.RawStruct(name: name, module: module, behavior: behavior, members: [], location: location)
        case "member":
            guard currentStruct != nil, let name = required("name"), let type = required("type") else {
                if currentStruct == nil { fail("<member> outside a <struct>") }
                return
            }
            let key = attributes["key"] ?? "false"
            guard key == "true" || key == "false" else { return fail("member \(name): key=\"\(key)\" is not true or false") }
            var isSequence = false
            if let length = attributes["sequenceMaxLength"] {
                guard length == "-1" else {
                    return fail("member \(name): sequenceMaxLength=\"\(length)\" is not supported (only -1, unbounded)")
                }
                isSequence = true
            }
            if attributes["nonBasicTypeName"] != nil, type != "nonBasic" {
                return fail("member \(name): nonBasicTypeName is only for type=\"nonBasic\"")
            }
            currentStruct?.members.append(
                QDMParser.RawMember(
                    name: name, type: type, nonBasicTypeName: attributes["nonBasicTypeName"], isKey: key == "true",
                    isSequence: isSequence, location: location))
        case "enum":
            guard let name = required("name") else { return }
            currentEnum = QDMEnum(name: module.isEmpty ? name : module + "." + name, enumerators: [], location: location)
        case "enumerator":
            guard currentEnum != nil, let name = required("name") else {
                if currentEnum == nil { fail("<enumerator> outside an <enum>") }
                return
            }
            currentEnum?.enumerators.append(name)
        case "doc":
            break
        default:
            fail("<\(elementName)> is not a QDM element (types, include, module, struct, member, enum, enumerator, doc)")
        }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        depth -= 1
        switch elementName {
        case "module":
            module = ""
        case "struct":
            if let item = currentStruct {
                if item.members.isEmpty, error == nil {
                    error = QDMError("struct \(item.name) has no members", at: item.location)
                    parser.abortParsing()
                }
                structs.append(item)
            }
            currentStruct = nil
        case "enum":
            if let item = currentEnum {
                if item.enumerators.isEmpty, error == nil {
                    error = QDMError("enum \(item.name) has no enumerators", at: item.location)
                    parser.abortParsing()
                }
                enums.append(item)
            }
            currentEnum = nil
        default:
            break
        }
    }

    static func isScopedName(_ name: String) -> Bool {
        name.split(separator: "::", omittingEmptySubsequences: false).allSatisfy { part in
            guard let first = part.first, first.isLetter || first == "_" else { return false }
            return part.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
        }
    }
}
