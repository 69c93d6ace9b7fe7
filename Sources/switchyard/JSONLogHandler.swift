import Logging
import SwitchyardCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `--log-format json`: one JSON object per line on standard error — `time`, `level`,
/// `label`, `message`, and every metadata key at the top level (nested metadata as objects
/// and arrays) — for log shippers that parse structured lines.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: JSONValue] = [:]
        for (key, value) in metadata { object[key] = Self.json(value) }
        for (key, value) in metadataProvider?.get() ?? [:] { object[key] = Self.json(value) }
        for (key, value) in event.metadata ?? [:] { object[key] = Self.json(value) }
        object["time"] = .string(Clock.rfc3339(unixNanos: Clock.nowUnixNanos()))
        object["level"] = .string(event.level.rawValue)
        object["label"] = .string(label)
        object["message"] = .string(event.message.description)
        if let error = event.error { object["error"] = .string("\(error)") }
        var line = JSONValue.object(object).serializedBytes()
        line.append(UInt8(ascii: "\n"))
        // One write per line: lines from different threads never interleave.
        line.withUnsafeBytes { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    private static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let members): .object(members.mapValues(json))
        }
    }
}
