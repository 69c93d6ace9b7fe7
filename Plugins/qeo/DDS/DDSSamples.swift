import CCycloneDDS
public import QeoQDM
public import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#endif

/// JSON values to and from samples in the memory layout of a ``DDSTypeProgram``. Values must
/// have been checked with ``QDMModel/conform(_:to:)`` first; anything else is written as zero.
/// Strings and sequence buffers are `malloc`ed, so a sample this writes is released with
/// ``release(_:)`` (and a sample Cyclone lends is read, never released here).
public struct DDSSamples: Sendable {
    let model: QDMModel
    let program: DDSTypeProgram
    /// Per struct: the index of each member in JSON key order (sorted names, the last member of
    /// a repeated name), so ``serialized(_:)`` writes what `read(_:).serializedBytes()` would.
    let keyOrder: [String: [Int]]

    public init(model: QDMModel, program: DDSTypeProgram) {
        self.model = model
        self.program = program
        var keyOrder: [String: [Int]] = [:]
        for (name, item) in model.structs {
            var last: [String: Int] = [:]
            for (index, member) in item.members.enumerated() { last[member.name] = index }
            keyOrder[name] = last.sorted { $0.key < $1.key }.map(\.value)
        }
        self.keyOrder = keyOrder
    }

    /// A zeroed sample of the topic's size, aligned.
    public func allocate() -> UnsafeMutableRawPointer {
        let layout = program.layout
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: max(layout.size, 1), alignment: max(layout.alignment, 8))
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(layout.size, 1))
        return pointer
    }

    /// Writes `value` into `sample`.
    public func write(_ value: JSONValue, into sample: UnsafeMutableRawPointer) {
        write(value, structure: program.root, at: sample)
    }

    /// Frees what ``write(_:into:)`` allocated inside `sample`, then the sample.
    public func release(_ sample: UnsafeMutableRawPointer) {
        release(structure: program.root, at: sample)
        sample.deallocate()
    }

    /// Reads a sample into JSON.
    public func read(_ sample: UnsafeRawPointer) -> JSONValue { read(structure: program.root, at: sample) }

    /// The sample as compact JSON bytes, the same as `read(sample).serializedBytes()`, written
    /// straight from the sample's memory (no dictionary per struct, no key sorting per sample).
    public func serialized(_ sample: UnsafeRawPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(max(64, program.layout.size * 2))
        serialize(kind: .structure(program.root), at: sample, to: &output)
        return output
    }

    private func serialize(kind: QDMMember.Kind, at pointer: UnsafeRawPointer, to output: inout [UInt8]) {
        switch kind {
        case .structure(let name):
            guard let item = model.structs[name], let layout = program.layouts[name], let order = keyOrder[name] else {
                return JSONValue.null.write(to: &output)
            }
            output.append(UInt8(ascii: "{"))
            for (position, index) in order.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                JSONValue.writeString(item.members[index].name, to: &output)
                output.append(UInt8(ascii: ":"))
                serialize(kind: item.members[index].kind, at: pointer + layout.offsets[index], to: &output)
            }
            output.append(UInt8(ascii: "}"))
        case .sequence(let element):
            let sequence = pointer.load(as: dds_sequence_t.self)
            output.append(UInt8(ascii: "["))
            if let buffer = sequence._buffer {
                let stride = elementStride(element)
                for index in 0..<Int(sequence._length) {
                    if index > 0 { output.append(UInt8(ascii: ",")) }
                    serialize(kind: element, at: UnsafeRawPointer(buffer) + index * stride, to: &output)
                }
            }
            output.append(UInt8(ascii: "]"))
        default:
            read(kind: kind, at: pointer).write(to: &output)
        }
    }

    private func write(_ value: JSONValue, structure name: String, at base: UnsafeMutableRawPointer) {
        guard let item = model.structs[name], let layout = program.layouts[name] else { return }
        for (index, member) in item.members.enumerated() {
            write(value[member.name] ?? .null, kind: member.kind, at: base + layout.offsets[index])
        }
    }

    private func write(_ value: JSONValue, kind: QDMMember.Kind, at pointer: UnsafeMutableRawPointer) {
        switch kind {
        case .boolean: pointer.storeBytes(of: value.boolValue ?? false, as: Bool.self)
        case .byte: pointer.storeBytes(of: UInt8(clamping: value.intValue ?? 0), as: UInt8.self)
        case .int16: pointer.storeBytes(of: Int16(clamping: value.intValue ?? 0), as: Int16.self)
        case .int32: pointer.storeBytes(of: Int32(clamping: value.intValue ?? 0), as: Int32.self)
        case .int64: pointer.storeBytes(of: Int64(value.intValue ?? 0), as: Int64.self)
        case .float32: pointer.storeBytes(of: Float(value.doubleValue ?? 0), as: Float.self)
        case .string: pointer.storeBytes(of: strdup(value.stringValue ?? ""), as: UnsafeMutablePointer<CChar>?.self)
        case .enumeration(let name):
            let ordinal = value.stringValue.flatMap { model.enums[name]?.enumerators.firstIndex(of: $0) } ?? 0
            pointer.storeBytes(of: UInt32(ordinal), as: UInt32.self)
        case .structure(let name): write(value, structure: name, at: pointer)
        case .sequence(let element):
            let items = value.arrayValue ?? []
            let stride = elementStride(element)
            let buffer = items.isEmpty ? nil : calloc(items.count, stride)
            for (index, item) in items.enumerated() { if let buffer { write(item, kind: element, at: buffer + index * stride) } }
            // Without memory (calloc fails) the sequence is written empty: a length over a null
            // buffer would have Cyclone read through it.
            let length = buffer == nil ? 0 : UInt32(clamping: items.count)
            var sequence = dds_sequence_t()
            sequence._maximum = length
            sequence._length = length
            sequence._buffer = buffer?.assumingMemoryBound(to: UInt8.self)
            sequence._release = true
            pointer.storeBytes(of: sequence, as: dds_sequence_t.self)
        }
    }

    private func release(structure name: String, at base: UnsafeMutableRawPointer) {
        guard let item = model.structs[name], let layout = program.layouts[name] else { return }
        for (index, member) in item.members.enumerated() { release(kind: member.kind, at: base + layout.offsets[index]) }
    }

    private func release(kind: QDMMember.Kind, at pointer: UnsafeMutableRawPointer) {
        switch kind {
        case .string: free(pointer.load(as: UnsafeMutablePointer<CChar>?.self))
        case .structure(let name): release(structure: name, at: pointer)
        case .sequence(let element):
            let sequence = pointer.load(as: dds_sequence_t.self)
            guard let buffer = sequence._buffer else { return }
            let stride = elementStride(element)
            for index in 0..<Int(sequence._length) { release(kind: element, at: UnsafeMutableRawPointer(buffer) + index * stride) }
            free(buffer)
        default: break
        }
    }

    private func read(structure name: String, at base: UnsafeRawPointer) -> JSONValue {
        guard let item = model.structs[name], let layout = program.layouts[name] else { return .null }
        var fields: [String: JSONValue] = [:]
        for (index, member) in item.members.enumerated() { fields[member.name] = read(kind: member.kind, at: base + layout.offsets[index]) }
        return .object(fields)
    }

    private func read(kind: QDMMember.Kind, at pointer: UnsafeRawPointer) -> JSONValue {
        switch kind {
        case .boolean: return .bool(pointer.load(as: UInt8.self) != 0)
        case .byte: return .int(Int(pointer.load(as: UInt8.self)))
        case .int16: return .int(Int(pointer.load(as: Int16.self)))
        case .int32: return .int(Int(pointer.load(as: Int32.self)))
        case .int64: return .int(Int(pointer.load(as: Int64.self)))
        case .float32: return .double(Double(pointer.load(as: Float.self)))
        case .string:
            guard let text = pointer.load(as: UnsafePointer<CChar>?.self) else { return .string("") }
            return .string(String(cString: text))
        case .enumeration(let name):
            let ordinal = Int(pointer.load(as: UInt32.self))
            let names = model.enums[name]?.enumerators ?? []
            return names.indices.contains(ordinal) ? .string(names[ordinal]) : .int(ordinal)
        case .structure(let name): return read(structure: name, at: pointer)
        case .sequence(let element):
            let sequence = pointer.load(as: dds_sequence_t.self)
            guard let buffer = sequence._buffer else { return .array([]) }
            let stride = elementStride(element)
            return .array((0..<Int(sequence._length)).map { read(kind: element, at: UnsafeRawPointer(buffer) + $0 * stride) })
        }
    }

    private func elementStride(_ kind: QDMMember.Kind) -> Int {
        let storage = DDSTypeProgram.storage(kind, layouts: program.layouts)
        return (storage.size + storage.alignment - 1) / storage.alignment * storage.alignment
    }
}
