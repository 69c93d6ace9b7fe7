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

    /// Reads every remaining value of `message` at the current level.
    static func readAll(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = try read(message) { values.append(value) }
        return values
    }

    /// Reads the next value, or nil at the end of the current container.
    static func read(_ message: OpaquePointer) throws(DBusError) -> DBusValue? {
        var type: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let peeked = sd_bus_message_peek_type(message, &type, &contentsPointer)
        if peeked < 0 { throw DBusError(errno: peeked, "reading a message") }
        if peeked == 0 { return nil }
        let contents = contentsPointer.map { String(cString: $0) } ?? ""
        func check(_ result: Int32) throws(DBusError) {
            if result < 0 { throw DBusError(errno: result, "reading \(Character(UnicodeScalar(UInt8(bitPattern: type))))") }
        }
        func basic<T: BitwiseCopyable>(_ initial: T) throws(DBusError) -> T {
            var slot = initial
            try check(withUnsafeMutableBytes(of: &slot) { sd_bus_message_read_basic(message, type, $0.baseAddress) })
            return slot
        }
        switch UInt8(bitPattern: type) {
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
            let text = pointer.map { String(cString: $0) } ?? ""
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "o"): return .objectPath(text)
            case UInt8(ascii: "g"): return .signature(text)
            default: return .string(text)
            }
        case UInt8(ascii: "a") where contents == "y":
            var pointer: UnsafeRawPointer?
            var size = 0
            try check(sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &pointer, &size))
            let bytes = pointer.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
            return .bytes(bytes)
        case UInt8(ascii: "a"):
            try check(contents.withCString { sd_bus_message_enter_container(message, type, $0) })
            if contents.hasPrefix("{"), contents.hasSuffix("}") {
                let inner = String(contents.dropFirst().dropLast())
                let keyType = String(inner.prefix(1))
                var entries: [DBusValue: DBusValue] = [:]
                while true {
                    let entered = inner.withCString { sd_bus_message_enter_container(message, CChar(UInt8(ascii: "e")), $0) }
                    try check(entered)
                    if entered == 0 { break }
                    let members = try readAll(message)
                    try check(sd_bus_message_exit_container(message))
                    if members.count == 2 { entries[members[0]] = members[1] }
                }
                try check(sd_bus_message_exit_container(message))
                return .dictionary(key: keyType, value: String(inner.dropFirst()), entries)
            }
            let elements = try readAll(message)
            try check(sd_bus_message_exit_container(message))
            return .array(element: contents, elements)
        case UInt8(ascii: "r"), UInt8(ascii: "v"):
            try check(contents.withCString { sd_bus_message_enter_container(message, type, $0) })
            let members = try readAll(message)
            try check(sd_bus_message_exit_container(message))
            if UInt8(bitPattern: type) == UInt8(ascii: "v") { return .variant(members.first ?? .structure([])) }
            return .structure(members)
        default:
            throw DBusError(message: "unsupported D-Bus type '\(Character(UnicodeScalar(UInt8(bitPattern: type))))'")
        }
    }
}
