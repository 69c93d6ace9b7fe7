public import Logging
public import SwitchyardPluginKit

/// Hands swift-log records of the libraries inside the plugin (Hummingbird, AsyncHTTPClient)
/// to the router's log, attributed to the instance.
public struct PluginLogHandler: LogHandler {
    let context: PluginContext
    /// The lowest level passed on.
    public var logLevel: Logger.Level = .warning
    /// Fields added to every record.
    public var metadata: Logger.Metadata = [:]

    /// A handler writing to `context`'s log.
    public init(context: PluginContext) { self.context = context }

    /// One metadata field.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one record.
    public func log(event: LogEvent) {
        let level: LogLevel =
            switch event.level {
            case .trace: .trace
            case .debug: .debug
            case .info: .info
            case .notice: .notice
            case .warning: .warning
            case .error: .error
            case .critical: .critical
            }
        let fields = metadata.merging(event.metadata ?? [:]) { $1 }
        let suffix = fields.isEmpty ? "" : " " + fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        context.log(level, "\(event.message)\(suffix)")
    }
}
