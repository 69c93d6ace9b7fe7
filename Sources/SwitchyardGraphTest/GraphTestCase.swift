public import SwitchyardConfig
public import SwitchyardCore
public import SwitchyardRouting
internal import SwitchyardRuntime

/// One test file of `switchyard test`: cases for one graph (see README, "Testing a graph
/// offline").
public struct GraphTestFile: Sendable {
    /// The file.
    public var path: String
    /// `routes:`: the route file or folder, as written (relative to the test file's folder).
    public var routes: String?
    /// `env:`: variables the route files' `${VAR}` see, over the process environment.
    public var environment: [String: String] = [:]
    /// `tests:`, in file order.
    public var cases: [GraphTestCase] = []
}

/// One case: envelopes injected at source ports, and what the sinks must then have received.
public struct GraphTestCase: Sendable {
    /// `name:`.
    public var name: String
    /// Where the case starts.
    public var location: SourceLocation
    /// `input:`: the envelopes to inject, in order; the graph settles after each.
    public var inputs: [Input] = []
    /// `expect:`: per sink port, the envelopes it must receive (an empty list: none).
    public var expectations: [PortExpectation] = []
    /// `order: strict` (the default) matches each port's envelopes in the order of the inputs
    /// that caused them; `any` in any order.
    public var ordered = true
    /// `sinks:`: how a sink port answers (default: it takes everything).
    public var sinks: [String: SinkBehaviour] = [:]
    /// `services:`: what a service piece answers, by `instance.port` for a plugin's and by
    /// iiidea id for an `http` piece (which never calls out here); default: its input.
    public var services: [String: JSONValue] = [:]
    /// `enable:`: iiideas switched on before the inputs (e.g. ones declared `enabled: false`).
    public var enable: [String] = []
    /// `disable:`: iiideas switched off before the inputs.
    public var disable: [String] = []
    /// `dead_letters:`: per route, how many dead letters it must have written.
    public var deadLetters: [(route: String, count: Int, location: SourceLocation)] = []
    /// Where each key of `sinks:` and `services:` is written, for errors about them.
    public var keyLocations: [String: SourceLocation] = [:]
    /// `timeout:`: how long the graph may take to settle after one input.
    public var timeout: Duration = .seconds(10)
    /// `clock:`: the time scripts read and inputs carry, in seconds since the epoch (default
    /// 2026-01-01T00:00:00Z): a case gives the same result whenever it runs.
    public var clock: Double = GraphTestCase.defaultClock
    /// 2026-01-01T00:00:00Z.
    public static let defaultClock: Double = 1_767_225_600

    /// One injected envelope.
    public struct Input: Sendable {
        /// `port:`, a source port.
        public var port: PortReference
        /// `type:`; nil: the port's first type.
        public var type: String?
        /// `subject:`.
        public var subject: String = ""
        /// `headers:`.
        public var headers: [(String, String)] = []
        /// `content_type:`.
        public var contentType = "application/json"
        /// `body:`.
        public var body: JSONValue = .object([:])
        /// Where it is written.
        public var location: SourceLocation
    }

    /// What one sink port must receive.
    public struct PortExpectation: Sendable {
        /// The sink port.
        public var port: PortReference
        /// The envelopes, in order.
        public var envelopes: [ExpectedEnvelope]
        /// Where it is written.
        public var location: SourceLocation
    }
}

/// What one received envelope must look like: each given field is checked, the rest is not.
public struct ExpectedEnvelope: Sendable {
    /// `type:`, exactly.
    public var type: String?
    /// `subject:`, exactly.
    public var subject: String?
    /// `content_type:`, exactly.
    public var contentType: String?
    /// `headers:`: each listed header with this value (others may be present).
    public var headers: [(String, String)] = []
    /// `body:`: the decoded body equals this.
    public var body: JSONValue?
    /// `body_contains:`: the decoded body contains this (objects: these members, recursively).
    public var bodyContains: JSONValue?
    /// `when:`: a condition, in the routes' own language, the envelope satisfies.
    public var condition: Condition?
    /// `refused:`: the sink refused it as not matching its types or schema, with a reason
    /// containing this text ("" for any reason).
    public var refused: String?
    /// Where it is written.
    public var location: SourceLocation
}

/// How a stand-in sink port answers a delivery.
public enum SinkBehaviour: String, Sendable, CaseIterable {
    /// Takes it and acknowledges OK.
    case accept
    /// Takes it and acknowledges REJECT (never retried: a dead letter on an at-least-once route).
    case reject
    /// Takes it and acknowledges RETRY (retried with the route's backoff).
    case retry
    /// Does not take it: SY_ERR_INVALID (rejected, not retried).
    case refuse
    /// Does not take it: SY_ERR_FAILED (retried).
    case fail
}

extension GraphTestFile {
    /// Reads a test file; every problem names file:line:column.
    public static func parse(text: String, path: String) -> (GraphTestFile?, [Diagnostic]) {
        var problems: [Diagnostic] = []
        guard let root = YAMLReader(environment: [:]).read(text, file: path, diagnostics: &problems), problems.isEmpty else {
            return (nil, problems)
        }
        var parser = GraphTestParser()
        let file = parser.file(root, path: path)
        return (parser.problems.isEmpty ? file : nil, parser.problems)
    }
}
