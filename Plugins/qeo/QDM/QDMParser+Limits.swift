import Foundation

extension QDMParser {
    /// The largest QDM file read: real ones are a few kilobytes, and a file is read whole.
    public static let maximumFileSize = 16 * 1024 * 1024

    /// The most members one topic may hold once nested structs are expanded (a sequence of a
    /// struct counts that struct once). Schemas, conformance checks and DDS type programs
    /// expand structs inline, so structs that each use the previous one several times would
    /// otherwise grow them exponentially; this also keeps a DDS type program's jumps within
    /// their 16 bits and every offset within 32.
    public static let maximumExpandedMembers = 10_000

    /// The deepest nesting of structs inside structs: deeper is refused, so walking a model
    /// (schemas, conformance, DDS programs, samples) recurses a bounded number of times.
    public static let maximumNestingDepth = 32

    /// Reads a file of at most ``maximumFileSize`` bytes that is a regular file (not a device or
    /// a pipe, which could be read without end).
    static func readFile(_ path: String, includedFrom location: QDMLocation?) throws(QDMError) -> Data {
        let what = location == nil ? "\(path)" : "included file \(path)"
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard let attributes, let size = attributes[.size] as? Int else {
            throw QDMError(location == nil ? "cannot read \(path)" : "included file \(path) cannot be read", at: location)
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw QDMError("\(what) is not a regular file", at: location)
        }
        guard size <= maximumFileSize,
            let handle = FileHandle(forReadingAtPath: path),
            let data = try? handle.read(upToCount: maximumFileSize + 1)
        else {
            throw QDMError("\(what) cannot be read or is larger than \(maximumFileSize / (1024 * 1024)) MiB", at: location)
        }
        try? handle.close()
        guard data.count <= maximumFileSize else {
            throw QDMError("\(what) is larger than \(maximumFileSize / (1024 * 1024)) MiB", at: location)
        }
        return data
    }

    /// Refuses what QDM never holds and the XML parser does not survive or bound: processing
    /// instructions other than the `<?xml …?>` declaration (Foundation's XMLParser dereferences
    /// the missing data of `<?name?>`) and a DOCTYPE (entity definitions expand without bound).
    /// Comments and CDATA sections are skipped.
    static func screen(_ data: Data, file: String) throws(QDMError) {
        let bytes = [UInt8](data)
        var line = 1
        var index = 0
        func starts(_ text: StaticString, at position: Int) -> Bool {
            let count = text.utf8CodeUnitCount
            guard position + count <= bytes.count, bytes[position] == text.utf8Start.pointee else { return false }
            return text.withUTF8Buffer { bytes[position..<position + count].elementsEqual($0) }
        }
        func skip(past terminator: StaticString) {
            while index < bytes.count, !starts(terminator, at: index) {
                if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                index += 1
            }
            index += terminator.utf8CodeUnitCount
        }
        var sawMarkup = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                line += 1
            } else if byte == UInt8(ascii: "<") {
                if starts("<!--", at: index) {
                    skip(past: "-->")
                    continue
                }
                if starts("<![CDATA[", at: index) {
                    skip(past: "]]>")
                    continue
                }
                if starts("<!DOCTYPE", at: index) || starts("<!ENTITY", at: index) {
                    throw QDMError(
                        "not a QDM file: a DOCTYPE or entity definition is not part of QDM", at: QDMLocation(file: file, line: line))
                }
                if starts("<?", at: index) {
                    let isDeclaration =
                        !sawMarkup && starts("<?xml", at: index) && index + 5 < bytes.count
                        && [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index + 5])
                    guard isDeclaration else {
                        throw QDMError(
                            "not a QDM file: a processing instruction is not part of QDM", at: QDMLocation(file: file, line: line))
                    }
                }
                sawMarkup = true
            }
            index += 1
        }
    }

    /// Counts each struct's members with nested structs expanded, refusing a topic over
    /// ``maximumExpandedMembers``. Structs are counted once each (memoized), so this is linear
    /// in the model; cycles and deep nesting have been refused before, so the recursion is bounded.
    static func checkExpandedSize(of model: QDMModel) throws(QDMError) {
        var counts: [String: Int] = [:]
        func count(_ name: String) throws(QDMError) -> Int {
            if let known = counts[name] { return known }
            guard let item = model.structs[name] else { return 1 }
            var total = 0
            for member in item.members {
                var kind = member.kind
                if case .sequence(let element) = kind { kind = element }
                let size: Int
                if case .structure(let inner) = kind { size = try count(inner) } else { size = 1 }
                total += size
                guard total <= maximumExpandedMembers else {
                    throw QDMError(
                        "\(name) expands to more than \(maximumExpandedMembers) members (structs nested inside each other several times)",
                        at: item.location)
                }
            }
            counts[name] = total
            return total
        }
        for name in model.structs.keys.sorted() { _ = try count(name) }
    }
}
