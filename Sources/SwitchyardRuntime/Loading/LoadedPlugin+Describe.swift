internal import SwitchyardABI
internal import SwitchyardBridge
public import SwitchyardCore

/// Why a plugin could not describe an instance (ABI section 6).
public struct DescribeError: Error, Sendable, CustomStringConvertible {
    /// The plugin's own message; it may start with the JSON Pointer of the configuration
    /// value it is about (`/qdm/0: …`).
    public var message: String
    /// True when the plugin refused the configuration (its message says why); false when the
    /// description itself was unusable (too large, not JSON, a wrong shape).
    public var fromPlugin: Bool

    public var description: String { message }
}

extension LoadedPlugin {
    /// The most a description may take: a description is a handful of ports and schemas, and
    /// past this bound a plugin is writing something else (SY_ERR_TOO_LARGE to the plugin).
    public static let maximumDescriptionSize = 16 * 1024 * 1024

    /// The largest error message read from `describe`.
    static let describeErrorCapacity = 4096

    /// What instance `instance` of this plugin is with `config`: the plugin's `describe`
    /// entry (ABI v2) when it has one, else the manifest's ports and types. Called while a
    /// route file is validated, before anything starts, on the calling thread.
    public func describe(instance: String, config: JSONValue) throws(DescribeError) -> InstanceDescription {
        guard let entry = table.api.describe else { return InstanceDescription() }
        var output = BoundedOutput(limit: Self.maximumDescriptionSize)
        var errorBytes = [UInt8](repeating: 0, count: Self.describeErrorCapacity)
        var errorLength = 0
        var configBytes = config.serializedBytes()
        var name = instance
        let status = withUnsafeMutablePointer(to: &output) { target in
            configBytes.withUnsafeBufferPointer { configBuffer in
                name.withUTF8 { nameBuffer in
                    errorBytes.withUnsafeMutableBufferPointer { errorBuffer in
                        withUnsafeMutablePointer(to: &errorLength) { lengthPointer in
                            entry(
                                sy_bytes(nameBuffer), sy_bytes(configBuffer),
                                sy_writer(target: UnsafeMutableRawPointer(target), write: BoundedOutput.write),
                                sy_error_buffer(data: errorBuffer.baseAddress, capacity: errorBuffer.count, length: lengthPointer))
                        }
                    }
                }
            }
        }
        configBytes.removeAll()
        // Past the bound the plugin got SY_ERR_TOO_LARGE and most likely returned it: say why.
        guard !output.overflowed else {
            throw DescribeError(
                message: "its description is larger than \(Self.maximumDescriptionSize / (1024 * 1024)) MiB", fromPlugin: false)
        }
        guard status == SY_OK else {
            // The plugin's length is not trusted past the buffer it was given.
            let message = String(decoding: errorBytes.prefix(min(max(errorLength, 0), errorBytes.count)), as: UTF8.self)
            throw DescribeError(message: message.isEmpty ? "describe failed with status \(status)" : message, fromPlugin: true)
        }
        do {
            return try InstanceDescription(parsing: output.bytes)
        } catch {
            throw DescribeError(message: "its description is unusable: \(error.reason)", fromPlugin: false)
        }
    }
}

/// The `sy_writer` target of a description: appends up to `limit` bytes, then refuses every
/// further write and remembers that it did.
struct BoundedOutput {
    let limit: Int
    var bytes: [UInt8] = []
    var overflowed = false

    init(limit: Int) { self.limit = limit }

    /// The C callback: `target` is the `BoundedOutput` of the call in progress.
    static let write: @convention(c) (UnsafeMutableRawPointer?, sy_bytes) -> Int32 = { target, chunk in
        guard let output = target?.assumingMemoryBound(to: BoundedOutput.self) else { return SY_ERR_INVALID }
        guard !output.pointee.overflowed else { return SY_ERR_TOO_LARGE }
        guard chunk.length <= output.pointee.limit - output.pointee.bytes.count else {
            output.pointee.overflowed = true
            output.pointee.bytes = []  // discarded, as the header says
            return SY_ERR_TOO_LARGE
        }
        guard chunk.length > 0 else { return SY_OK }
        // A length without bytes is a plugin bug: refused, not read.
        guard let data = chunk.data else { return SY_ERR_INVALID }
        output.pointee.bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: chunk.length))
        return SY_OK
    }
}
