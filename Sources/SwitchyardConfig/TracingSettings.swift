public import SwitchyardCore

/// `tracing:` of the route files (issue 23): where the router exports its spans (OTLP over
/// HTTP) and how many traces it records. Tracing is off unless a route file has the section.
public struct TracingSettings: Sendable, Equatable {
    /// `otlp_endpoint`: the OTLP/HTTP base URL (`http://collector:4318`); spans go to its
    /// `/v1/traces`. Nil: OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT or OTLP's default.
    public var endpoint: String?
    /// `service_name`: the `service.name` resource attribute (default `switchyard`).
    public var serviceName: String = "switchyard"
    /// `sample`: the share of new traces recorded, 0 to 1 (default 1). An envelope that arrives
    /// with a `traceparent` follows its sampled flag.
    public var sampleRatio: Double = 1
    /// Where the section is.
    public var location: SourceLocation?

    /// The defaults: export to OTLP's default endpoint, every trace.
    public init() {}

    /// Equal when they export alike: where the section is written does not count.
    public static func == (lhs: TracingSettings, rhs: TracingSettings) -> Bool {
        lhs.endpoint == rhs.endpoint && lhs.serviceName == rhs.serviceName && lhs.sampleRatio == rhs.sampleRatio
    }
}

extension TracingSettings {
    /// Keys `tracing:` accepts.
    private static let tracingKeys = RouteFileSchema.names(RouteFileSchema.tracingKeys)

    /// `tracing: { otlp_endpoint: http://127.0.0.1:4318, service_name: router, sample: 0.1 }`;
    /// `tracing: {}` turns tracing on with the defaults (and OTEL_* variables). Set in one
    /// route file only.
    static func merge(_ node: ConfigNode, into config: inout GraphConfig, diagnostics: inout [Diagnostic]) {
        if let previous = config.tracing?.location {
            diagnostics.append(Diagnostic("tracing is already set at \(previous)", at: node.location))
            return
        }
        var settings = TracingSettings()
        settings.location = node.location
        let members: [(key: String, keyLocation: SourceLocation, value: ConfigNode)]
        if case .scalar(.null) = node.kind {
            members = []
        } else if let mapping = node.members {
            members = mapping
        } else {
            diagnostics.append(
                Diagnostic("'tracing' must be a mapping such as { otlp_endpoint: http://127.0.0.1:4318, sample: 1 }", at: node.location))
            return
        }
        for member in members {
            switch member.key {
            case "otlp_endpoint":
                guard let value = member.value.string, value.hasPrefix("http://") || value.hasPrefix("https://"), value.count > 8 else {
                    diagnostics.append(
                        Diagnostic(
                            "tracing.otlp_endpoint must be an http:// or https:// URL, such as http://127.0.0.1:4318",
                            at: member.value.location))
                    continue
                }
                settings.endpoint = value
            case "service_name":
                guard let value = member.value.string, !value.isEmpty else {
                    diagnostics.append(Diagnostic("tracing.service_name must be a non-empty string", at: member.value.location))
                    continue
                }
                settings.serviceName = value
            case "sample":
                let ratio: Double? =
                    switch member.value.kind {
                    case .scalar(.int(let value)): Double(value)
                    case .scalar(.double(let value)): value
                    default: nil
                    }
                guard let ratio, ratio >= 0, ratio <= 1 else {
                    diagnostics.append(
                        Diagnostic("tracing.sample must be a number from 0 to 1 (the share of traces recorded)", at: member.value.location))
                    continue
                }
                settings.sampleRatio = ratio
            default:
                diagnostics.append(
                    Diagnostic(
                        "unknown key '\(member.key)' in tracing (expected: \(Self.tracingKeys.joined(separator: ", ")))",
                        at: member.keyLocation))
            }
        }
        config.tracing = settings
    }
}
