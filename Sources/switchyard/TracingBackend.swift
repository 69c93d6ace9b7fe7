import Logging
import ServiceLifecycle
import SwitchyardConfig
import SwitchyardRuntime
import Tracing

#if canImport(OTel)
    import OTel
#endif

/// swift-otel's tracer and OTLP/HTTP exporter for the router's spans, when the route files have
/// `tracing:`. Its service runs first in `switchyard run`'s group, so it is shut down last: the
/// spans of the router's drain are exported (flushed) before the process ends.
struct TracingBackend {
    /// What the router records its spans through.
    let tracing: RouterTracing
    /// The tracer's and exporter's background work: batching, export, the final flush.
    let service: any Service

    /// Sets up the export `settings` describe; the OTEL_* environment variables (such as
    /// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_SAMPLER, OTEL_BSP_SCHEDULE_DELAY) override them.
    init(settings: TracingSettings, logger: Logger) throws {
        #if canImport(OTel)
            var configuration = OTel.Configuration.default
            configuration.serviceName = settings.serviceName
            // swift-otel tells at info level each setting the environment changed, for every
            // signal; the router's log keeps its notices and warnings unless asked for debug.
            var diagnostics = logger
            if diagnostics.logLevel == .info { diagnostics.logLevel = .notice }
            configuration.diagnosticLogger = .custom(diagnostics)
            // The router's own metrics and logs have their own outputs (the admin port, stderr).
            configuration.metrics.enabled = false
            configuration.logs.enabled = false
            configuration.traces.enabled = true
            configuration.traces.exporter = .otlp
            configuration.traces.otlpExporter.protocol = .httpProtobuf
            if let endpoint = settings.endpoint { configuration.traces.otlpExporter.endpoint = Self.tracesURL(base: endpoint) }
            configuration.traces.sampler = .parentBasedTraceIDRatio(ratio: settings.sampleRatio) ?? .parentBasedAlwaysOn
            configuration.propagators = [.traceContext]
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            tracing = RouterTracing(tracer: backend.factory, logger: logger)
            service = backend.service
        #else
            throw TracingUnavailable()
        #endif
    }

    /// `otlp_endpoint` is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is: spans go to its
    /// `/v1/traces` (unless it already names that path).
    static func tracesURL(base: String) -> String {
        if base.hasSuffix("/v1/traces") { return base }
        return base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
    }
}

/// A build without swift-otel (`SWITCHYARD_WITHOUT_OTLP`, see Dependencies/Package.swift) cannot
/// export spans.
struct TracingUnavailable: Error, CustomStringConvertible {
    var description: String { "this build has no OTLP exporter (built with SWITCHYARD_WITHOUT_OTLP)" }
}
