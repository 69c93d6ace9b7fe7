import Logging
import SwitchyardCore

/// Wraps the chosen log handler so no line leaves with a secret in it: the message and every
/// metadata value pass through ``Redaction`` (route-file secrets, URL passwords, tokens).
struct RedactingLogHandler<Inner: LogHandler>: LogHandler {
    var inner: Inner

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(Redaction.redact(event.message.description))"
        event.metadata = event.metadata?.mapValues(Self.redact)
        inner.log(event: event)
    }

    private static func redact(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(Redaction.redact(text))
        case .stringConvertible(let convertible): .string(Redaction.redact(convertible.description))
        case .array(let values): .array(values.map(redact))
        case .dictionary(let members): .dictionary(members.mapValues(redact))
        }
    }
}
