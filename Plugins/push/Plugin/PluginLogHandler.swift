import Logging
import SwitchyardPluginKit

/// Hands swift-log records of the libraries inside the plugin (Hummingbird, AsyncHTTPClient)
/// to the router's log, attributed to the instance.
struct PluginLogHandler: LogHandler {
    let context: PluginContext
    var logLevel: Logger.Level = .warning
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
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
