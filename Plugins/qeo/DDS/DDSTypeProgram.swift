public import QeoQDM

/// How a QDM struct sits in memory the way Cyclone DDS's generated C code lays it out (natural
/// C alignment on LP64): what the ops program's offsets point at and what samples look like.
public struct DDSLayout: Sendable, Equatable {
    public var size: Int
    public var alignment: Int
    /// Member offsets, in declaration order.
    public var offsets: [Int]

    /// A layout.
    public init(size: Int, alignment: Int, offsets: [Int]) {
        self.size = size
        self.alignment = alignment
        self.offsets = offsets
    }
}

/// A Cyclone DDS type program built at run time from a QDM struct, as `idlc -t` would generate
/// it (no XTypes type information, so peers match by type name): the ops, the key
/// descriptors, and the layout of every struct involved.
public struct DDSTypeProgram: Sendable {
    /// One key field: its dotted path, the index of its `KOF` instruction, its order.
    public struct Key: Sendable, Equatable {
        public var name: String
        public var kofIndex: UInt32
        public var order: UInt32
    }

    public let typeName: String
    public let ops: [UInt32]
    /// Instructions other than KOF (Cyclone's `m_nops`).
    public let instructionCount: UInt32
    public let keys: [Key]
    /// Layouts by struct name (the topic's and the nested ones).
    public let layouts: [String: DDSLayout]
    public let root: String

    // Cyclone's opcodes (dds/ddsc/dds_opcodes.h, 0.10).
    static let rts: UInt32 = 0
    static let adr: UInt32 = 0x01 << 24
    static let kof: UInt32 = 0x07 << 24
    static func type(_ value: UInt32) -> UInt32 { value << 16 }
    static func subtype(_ value: UInt32) -> UInt32 { value << 8 }
    static let oneByte: UInt32 = 1, twoBytes: UInt32 = 2, fourBytes: UInt32 = 3, eightBytes: UInt32 = 4, string: UInt32 = 5
    static let sequence: UInt32 = 7, structure: UInt32 = 0x0a, enumeration: UInt32 = 0x0c, external: UInt32 = 0x0d, boolean: UInt32 = 0x0e
    static let keyFlag: UInt32 = 1, floatFlag: UInt32 = 2, signedFlag: UInt32 = 4, mustUnderstandFlag: UInt32 = 8
    /// Enum storage: 4 bytes (size code 2 at bit 6).
    static let enumSize: UInt32 = 2 << 6

    /// Builds the program for `name` in `model`.
    public init(model: QDMModel, root name: String) throws(QDMError) {
        guard let item = model.structs[name] else { throw QDMError("unknown type \(name)", at: nil) }
        var builder = Builder(model: model)
        try builder.layout(of: name)
        let top = try builder.emit(item, topLevel: true, keyed: false)
        var keys: [Key] = []
        for member in item.members where member.isKey {
            guard let index = top.memberIndex[member.name] else { continue }
            for path in try builder.keyPaths(member, opIndex: index, subprogram: top.subprograms[member.name]) {
                keys.append(Key(name: path.name, kofIndex: UInt32(builder.ops.count), order: UInt32(keys.count)))
                builder.ops.append(Self.kof | UInt32(path.indices.count))
                builder.ops.append(contentsOf: path.indices.map(UInt32.init))
            }
        }
        typeName = item.ddsTypeName
        ops = builder.ops
        instructionCount = builder.instructions
        self.keys = keys
        layouts = builder.layouts
        root = name
    }

    /// The layout of the topic's own struct.
    public var layout: DDSLayout { layouts[root] ?? DDSLayout(size: 0, alignment: 1, offsets: []) }

    /// Size and alignment of a member kind in a C struct.
    static func storage(_ kind: QDMMember.Kind, layouts: [String: DDSLayout]) -> (size: Int, alignment: Int) {
        switch kind {
        case .boolean, .byte: (1, 1)
        case .int16: (2, 2)
        case .int32, .float32, .enumeration: (4, 4)
        case .int64, .string: (8, 8)
        // dds_sequence_t: _maximum, _length (uint32), _buffer (pointer), _release (bool).
        case .sequence: (24, 8)
        case .structure(let name): (layouts[name]?.size ?? 0, layouts[name]?.alignment ?? 1)
        }
    }

    struct Emitted {
        var start: Int
        var memberIndex: [String: Int] = [:]
        /// Where each nested struct member's program starts.
        var subprograms: [String: Emitted] = [:]
    }

    struct Builder {
        let model: QDMModel
        var ops: [UInt32] = []
        var instructions: UInt32 = 0
        var layouts: [String: DDSLayout] = [:]

        mutating func layout(of name: String) throws(QDMError) {
            guard layouts[name] == nil, let item = model.structs[name] else { return }
            var offset = 0
            var alignment = 1
            var offsets: [Int] = []
            for member in item.members {
                if case .structure(let inner) = member.kind { try layout(of: inner) }
                if case .sequence(let element) = member.kind {
                    switch element {
                    case .structure(let inner): try layout(of: inner)
                    case .sequence, .enumeration:
                        throw QDMError("member \(member.name): sequences of enums or sequences are not supported yet", at: member.location)
                    default: break
                    }
                }
                let storage = DDSTypeProgram.storage(member.kind, layouts: layouts)
                offset = (offset + storage.alignment - 1) / storage.alignment * storage.alignment
                offsets.append(offset)
                offset += storage.size
                alignment = max(alignment, storage.alignment)
            }
            let size = (offset + alignment - 1) / alignment * alignment
            layouts[name] = DDSLayout(size: size, alignment: alignment, offsets: offsets)
        }

        static func basicType(_ kind: QDMMember.Kind) -> UInt32? {
            switch kind {
            case .boolean: DDSTypeProgram.boolean
            case .byte: DDSTypeProgram.oneByte
            case .int16: DDSTypeProgram.twoBytes
            case .int32, .float32: DDSTypeProgram.fourBytes
            case .int64: DDSTypeProgram.eightBytes
            case .string: DDSTypeProgram.string
            default: nil
            }
        }

        static func numberFlags(_ kind: QDMMember.Kind) -> UInt32 {
            switch kind {
            case .int16, .int32, .int64: DDSTypeProgram.signedFlag
            case .float32: DDSTypeProgram.floatFlag
            default: 0
            }
        }

        mutating func emit(_ item: QDMStruct, topLevel: Bool, keyed: Bool) throws(QDMError) -> Emitted {
            var emitted = Emitted(start: ops.count)
            let offsets = layouts[item.name]?.offsets ?? []
            var nested: [(member: QDMMember, opIndex: Int, inner: String, isKey: Bool, words: UInt32)] = []
            for (position, member) in item.members.enumerated() {
                let isKey = topLevel ? member.isKey : keyed
                let flags = isKey ? DDSTypeProgram.keyFlag | (topLevel ? DDSTypeProgram.mustUnderstandFlag : 0) : 0
                let offset = UInt32(offsets[position])
                emitted.memberIndex[member.name] = ops.count
                instructions += 1
                switch member.kind {
                case .structure(let inner):
                    nested.append((member, ops.count, inner, isKey, 3))
                    ops += [DDSTypeProgram.adr | DDSTypeProgram.type(DDSTypeProgram.external) | flags, offset, 0]
                case .enumeration(let name):
                    let count = UInt32(model.enums[name]?.enumerators.count ?? 1)
                    ops += [
                        DDSTypeProgram.adr | DDSTypeProgram.type(DDSTypeProgram.enumeration) | DDSTypeProgram.enumSize | flags, offset,
                        count - 1,
                    ]
                case .sequence(.structure(let inner)):
                    let elementSize = UInt32(layouts[inner]?.size ?? 0)
                    nested.append((member, ops.count, inner, false, 4))
                    ops += [
                        DDSTypeProgram.adr | DDSTypeProgram.type(DDSTypeProgram.sequence)
                            | DDSTypeProgram.subtype(DDSTypeProgram.structure),
                        offset, elementSize, 0,
                    ]
                case .sequence(let element):
                    guard let basic = Self.basicType(element) else {
                        throw QDMError("member \(member.name): this sequence is not supported yet", at: member.location)
                    }
                    ops += [
                        DDSTypeProgram.adr | DDSTypeProgram.type(DDSTypeProgram.sequence) | DDSTypeProgram.subtype(basic)
                            | Self.numberFlags(element) | flags, offset,
                    ]
                default:
                    guard let basic = Self.basicType(member.kind) else { continue }
                    ops += [DDSTypeProgram.adr | DDSTypeProgram.type(basic) | Self.numberFlags(member.kind) | flags, offset]
                }
            }
            ops.append(DDSTypeProgram.rts)
            instructions += 1
            for entry in nested {
                guard let inner = model.structs[entry.inner] else { continue }
                let sub = try emit(inner, topLevel: false, keyed: entry.isKey)
                // The instruction's length in words, then the jump to the subtype's ops.
                ops[entry.opIndex + Int(entry.words) - 1] = entry.words << 16 | UInt32(sub.start - entry.opIndex)
                emitted.subprograms[entry.member.name] = sub
            }
            return emitted
        }

        /// The KOF paths of a key member: the member itself, or every leaf of a key struct.
        func keyPaths(_ member: QDMMember, opIndex: Int, subprogram: Emitted?) throws(QDMError) -> [(name: String, indices: [Int])] {
            guard case .structure(let inner) = member.kind, let item = model.structs[inner], let subprogram else {
                return [(member.name, [opIndex])]
            }
            var paths: [(name: String, indices: [Int])] = []
            for child in item.members {
                guard let childIndex = subprogram.memberIndex[child.name] else { continue }
                let relative = childIndex - subprogram.start
                for path in try keyPaths(child, opIndex: relative, subprogram: subprogram.subprograms[child.name]) {
                    paths.append((member.name + "." + path.name, [opIndex] + path.indices))
                }
            }
            return paths
        }
    }
}
