import CSDBus
import Foundation

/// An sd-bus call that failed, with the error name D-Bus gave (`org.bluez.Error.NotPermitted`)
/// or the errno sd-bus reported.
public struct DBusError: Error, Sendable, CustomStringConvertible {
    /// The D-Bus error name, when the peer answered with an error.
    public var name: String?
    /// The message.
    public var message: String

    /// Creates an error.
    public init(name: String? = nil, message: String) {
        self.name = name
        self.message = message
    }

    init(errno code: Int32, _ doing: String) {
        self.init(message: "\(doing): \(String(cString: strerror(-code)))")
    }

    public var description: String { name.map { "\($0): \(message)" } ?? message }
}

/// Writes values into and reads values out of an `sd_bus_message`.
enum DBusCoding {
    /// Appends `value` to `message`.
    static func append(_ value: DBusValue, to message: OpaquePointer) throws(DBusError) {
        func check(_ result: Int32) throws(DBusError) {
            if result < 0 { throw DBusError(errno: result, "appending \(value.signature)") }
        }
        switch value {
        case .byte(var byte): try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "y")), &byte))
        case .boolean(let flag):
            var number: Int32 = flag ? 1 : 0
            try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "b")), &number))
        case .int16(var number): try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "n")), &number))
        case .uint16(var number): try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "q")), &number))
        case .int32(var number): try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "i")), &number))
        case .uint32(var number): try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &number))
        case .int64(var number): try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "x")), &number))
        case .uint64(var number): try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "t")), &number))
        case .double(var number): try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "d")), &number))
        case .string(let text), .objectPath(let text), .signature(let text):
            let type = value.signature.utf8.first ?? UInt8(ascii: "s")
            try check(text.withCString { sd_bus_message_append_basic(message, CChar(type), $0) })
        case .array("y", let elements):
            let bytes = elements.compactMap { if case .byte(let byte) = $0 { byte } else { nil } }
            try check(bytes.withUnsafeBytes { sd_bus_message_append_array(message, CChar(UInt8(ascii: "y")), $0.baseAddress, $0.count) })
        case .array(let element, let elements):
            try check(element.withCString { sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), $0) })
            for element in elements { try append(element, to: message) }
            try check(sd_bus_message_close_container(message))
        case .dictionary(let keyType, let valueType, let entries):
            try check(
                (keyType + valueType).withCString {
                    sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "{\(String(cString: $0))}")
                })
            for (key, entry) in entries {
                try check((keyType + valueType).withCString { sd_bus_message_open_container(message, CChar(UInt8(ascii: "e")), $0) })
                try append(key, to: message)
                try append(entry, to: message)
                try check(sd_bus_message_close_container(message))
            }
            try check(sd_bus_message_close_container(message))
        case .structure(let members):
            let contents = members.map(\.signature).joined()
            try check(contents.withCString { sd_bus_message_open_container(message, CChar(UInt8(ascii: "r")), $0) })
            for member in members { try append(member, to: message) }
            try check(sd_bus_message_close_container(message))
        case .variant(let inner):
            try check(inner.signature.withCString { sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), $0) })
            try append(inner, to: message)
            try check(sd_bus_message_close_container(message))
        }
    }

    /// What one message may still decode to; every value, byte and nesting level is counted.
    struct Budget {
        var values: Int
        var bytes: Int
        let maximumDepth: Int
        var depth = 0

        init(_ limits: DBusLimits) {
            values = limits.maximumValues
            bytes = limits.maximumBytes
            maximumDepth = limits.maximumDepth
        }

        mutating func spend(values count: Int = 1, bytes size: Int = 0) throws(DBusError) {
            values -= count
            bytes -= size
            if values < 0 { throw DBusError(message: "the message holds more values than the limit allows") }
            if bytes < 0 { throw DBusError(message: "the message holds more bytes of strings and arrays than the limit allows") }
        }

        mutating func enter() throws(DBusError) {
            depth += 1
            if depth > maximumDepth { throw DBusError(message: "the message nests containers deeper than \(maximumDepth)") }
        }

        mutating func exit() { depth -= 1 }
    }

    /// A C string from sd-bus (validated UTF-8, NUL-terminated) as a String.
    static func text(_ pointer: UnsafePointer<CChar>) -> String { String(cString: pointer) }

    /// Reads every remaining value of `message` at the current level.
    static func readAll(_ message: OpaquePointer, budget: inout Budget) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = try read(message, budget: &budget) { values.append(value) }
        return values
    }

    /// Reads the next value, or nil at the end of the current container.
    static func read(_ message: OpaquePointer, budget: inout Budget) throws(DBusError) -> DBusValue? {
        var type: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let peeked = sd_bus_message_peek_type(message, &type, &contentsPointer)
        if peeked < 0 { throw DBusError(errno: peeked, "reading a message") }
        if peeked == 0 { return nil }
        try budget.spend()
        let contents = contentsPointer.map(text) ?? ""
        let code = UInt8(bitPattern: type)
        func check(_ result: Int32) throws(DBusError) {
            if result < 0 { throw DBusError(errno: result, "reading \(Character(UnicodeScalar(code)))") }
        }
        func basic<T: BitwiseCopyable>(_ initial: T) throws(DBusError) -> T {
            var slot = initial
            try check(withUnsafeMutableBytes(of: &slot) { sd_bus_message_read_basic(message, type, $0.baseAddress) })
            return slot
        }
        switch code {
        case UInt8(ascii: "y"): return .byte(try basic(UInt8(0)))
        case UInt8(ascii: "b"): return .boolean(try basic(Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try basic(Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try basic(UInt16(0)))
        case UInt8(ascii: "i"), UInt8(ascii: "h"): return .int32(try basic(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try basic(UInt64(0)))
        case UInt8(ascii: "d"): return .double(try basic(Double(0)))
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            var pointer: UnsafePointer<CChar>?
            try check(sd_bus_message_read_basic(message, type, &pointer))
            // Counted before the copy is made.
            try budget.spend(values: 0, bytes: pointer.map { strlen($0) } ?? 0)
            let text = pointer.map(text) ?? ""
            switch code {
            case UInt8(ascii: "o"): return .objectPath(text)
            case UInt8(ascii: "g"): return .signature(text)
            default: return .string(text)
            }
        case UInt8(ascii: "a") where contents == "y":
            var pointer: UnsafeRawPointer?
            var size = 0
            try check(sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &pointer, &size))
            // Counted before anything is allocated: each byte becomes a value.
            try budget.spend(values: max(size, 0), bytes: max(size, 0))
            let bytes = pointer.map { Array(UnsafeRawBufferPointer(start: $0, count: max(size, 0))) } ?? []
            return .bytes(bytes)
        case UInt8(ascii: "a"):
            try enter(message, type, contents, &budget)
            if contents.hasPrefix("{"), contents.hasSuffix("}"), contents.count >= 4 {
                let inner = String(contents.dropFirst().dropLast())
                let keyType = String(inner.prefix(1))
                var entries: [DBusValue: DBusValue] = [:]
                while true {
                    let entered = inner.withCString { sd_bus_message_enter_container(message, CChar(UInt8(ascii: "e")), $0) }
                    try check(entered)
                    if entered == 0 { break }
                    let members = try readAll(message, budget: &budget)
                    try check(sd_bus_message_exit_container(message))
                    if members.count == 2 { entries[members[0]] = members[1] }
                }
                try exit(message, &budget)
                return .dictionary(key: keyType, value: String(inner.dropFirst()), entries)
            }
            let elements = try readAll(message, budget: &budget)
            try exit(message, &budget)
            return .array(element: contents, elements)
        case UInt8(ascii: "r"), UInt8(ascii: "v"):
            try enter(message, type, contents, &budget)
            let members = try readAll(message, budget: &budget)
            try exit(message, &budget)
            if code == UInt8(ascii: "v") { return .variant(members.first ?? .structure([])) }
            return .structure(members)
        default:
            throw DBusError(message: "unsupported D-Bus type '\(Character(UnicodeScalar(code)))'")
        }
    }

    private static func enter(_ message: OpaquePointer, _ type: CChar, _ contents: String, _ budget: inout Budget) throws(DBusError) {
        try budget.enter()
        let entered = contents.withCString { sd_bus_message_enter_container(message, type, $0) }
        if entered < 0 { throw DBusError(errno: entered, "entering a container") }
    }

    private static func exit(_ message: OpaquePointer, _ budget: inout Budget) throws(DBusError) {
        let left = sd_bus_message_exit_container(message)
        if left < 0 { throw DBusError(errno: left, "leaving a container") }
        budget.exit()
    }
}

/// How much one received message may decode to: a hostile peer cannot make the decoder
/// allocate without bound (each value is a heap object) or recurse without bound.
public struct DBusLimits: Sendable {
    /// Values in one message, every element of every container counted (default 200,000).
    public var maximumValues: Int
    /// Bytes of strings and byte arrays in one message (default 4 MiB).
    public var maximumBytes: Int
    /// Containers inside containers (default 32).
    public var maximumDepth: Int

    /// Limits; the defaults hold a `GetManagedObjects` of a busy BlueZ many times over.
    public init(maximumValues: Int = 200_000, maximumBytes: Int = 4 << 20, maximumDepth: Int = 32) {
        self.maximumValues = maximumValues
        self.maximumBytes = maximumBytes
        self.maximumDepth = maximumDepth
    }
}
