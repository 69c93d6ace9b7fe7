import SwitchyardConfig
import SwitchyardCore
import Testing

/// `tracing:` of the route files: off unless present, checked value by value.
@Suite struct TracingSettingsTests {
    private func load(_ text: String) -> (GraphConfig, [Diagnostic]) {
        ConfigLoader(environment: [:]).load(sources: [(file: "r.yaml", text: text)])
    }

    @Test func tracingIsOffUnlessTheSectionIsThere() {
        let (config, diagnostics) = load("instances: {}\n")
        #expect(diagnostics.isEmpty)
        #expect(config.tracing == nil)
    }

    @Test func anEmptySectionTurnsTracingOnWithTheDefaults() throws {
        for text in ["tracing: {}\n", "tracing:\n"] {
            let (config, diagnostics) = load(text)
            #expect(diagnostics.isEmpty, "\(diagnostics)")
            let settings = try #require(config.tracing)
            #expect(settings.endpoint == nil && settings.serviceName == "switchyard" && settings.sampleRatio == 1)
        }
    }

    @Test func everySettingIsRead() throws {
        let (config, diagnostics) = load(
            "tracing: { otlp_endpoint: \"http://127.0.0.1:4318\", service_name: edge-router, sample: 0.25 }\n")
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let settings = try #require(config.tracing)
        #expect(settings.endpoint == "http://127.0.0.1:4318")
        #expect(settings.serviceName == "edge-router")
        #expect(settings.sampleRatio == 0.25)
    }

    @Test(arguments: [
        ("tracing: { otlp_endpoint: collector:4318 }", "tracing.otlp_endpoint must be an http:// or https:// URL"),
        ("tracing: { sample: 2 }", "tracing.sample must be a number from 0 to 1"),
        ("tracing: { sample: often }", "tracing.sample must be a number from 0 to 1"),
        ("tracing: { service_name: \"\" }", "tracing.service_name must be a non-empty string"),
        ("tracing: { endpoint: x }", "unknown key 'endpoint' in tracing (expected: otlp_endpoint, service_name, sample)"),
        ("tracing: [a]", "'tracing' must be a mapping"),
    ])
    func badSettingsAreNamedWithTheirPlace(text: String, message: String) {
        let (_, diagnostics) = load(text + "\n")
        #expect(diagnostics.count == 1 && diagnostics[0].message.hasPrefix(message), "\(diagnostics)")
        #expect(diagnostics.first?.location?.line == 1)
    }
}
