import SwitchyardCore
import Testing

private func refusal(_ text: String) -> ManifestError? {
    do throws(ManifestError) {
        _ = try PluginManifest(parsing: Array(text.utf8))
        return nil
    } catch {
        return error
    }
}

private let validManifest = """
    {
      "name": "relay_1", "version": "1.2.3", "description": "relays things",
      "ports": [
        {"name": "in", "direction": "sink", "types": ["*"], "feeds": ["out"], "description": "input"},
        {"name": "out", "direction": "source", "types": ["r.Msg", "r.Other"]},
        {"name": "opt", "direction": "source", "types": ["r.Msg"], "requires": "extra"}
      ],
      "types": {"r.Msg": {"type": "object", "properties": {"a": {"type": "string"}}}, "r.Other": true},
      "config": {"type": "object", "properties": {"extra": {"type": "object"}}}
    }
    """

@Suite struct PluginManifestTests {
    @Test func parsesAValidManifest() throws {
        let manifest = try PluginManifest(parsing: Array(validManifest.utf8))
        #expect(manifest.name == "relay_1")
        #expect(manifest.version == "1.2.3")
        #expect(manifest.summary == "relays things")
        #expect(manifest.ports.map(\.name) == ["in", "out", "opt"])
        let input = try #require(manifest.port(named: "in"))
        #expect(input.direction == .sink)
        #expect(input.isUntyped)
        #expect(input.feeds == ["out"])
        #expect(input.summary == "input")
        let output = try #require(manifest.port(named: "out"))
        #expect(output.direction == .source)
        #expect(output.types == ["r.Msg", "r.Other"])
        #expect(!output.isUntyped)
        #expect(output.requires == nil)
        #expect(manifest.port(named: "opt")?.requires == "extra")
        #expect(manifest.port(named: "nope") == nil)
        #expect(manifest.types.keys.sorted() == ["r.Msg", "r.Other"])
        #expect(manifest.config["properties"]?["extra"] == ["type": "object"])
    }

    @Test func configDefaultsToAnyObject() throws {
        let manifest = try PluginManifest(parsing: Array(#"{"name":"p","version":"1","ports":[]}"#.utf8))
        #expect(manifest.config == ["type": "object"])
        #expect(manifest.types.isEmpty)
        #expect(manifest.ports.isEmpty)
        #expect(manifest.summary == "")
    }

    @Test func jsonRoundTrips() throws {
        let manifest = try PluginManifest(parsing: Array(validManifest.utf8))
        let again = try PluginManifest(parsing: manifest.json.serializedBytes())
        #expect(again.name == manifest.name)
        #expect(again.version == manifest.version)
        #expect(again.summary == manifest.summary)
        #expect(again.ports == manifest.ports)
        #expect(again.types == manifest.types)
        #expect(again.config == manifest.config)
    }

    @Test func builtManifestSerializes() throws {
        let manifest = PluginManifest(
            name: "x", version: "0.1", ports: [PortDeclaration(name: "p", direction: .source, types: ["a.B"], requires: "k")]
        )
        let json = manifest.json
        #expect(json["ports"]?.arrayValue?.first == ["name": "p", "direction": "source", "types": ["a.B"], "requires": "k"])
        #expect(json["config"] == ["type": "object"])
    }

    @Test(arguments: [
        ("{not json", "manifest is not JSON"),
        ("[1, 2]", "manifest must be a JSON object"),
        (#"{"version":"1","ports":[]}"#, "manifest field 'name' must be a non-empty string"),
        (#"{"name":"","version":"1","ports":[]}"#, "manifest field 'name' must be a non-empty string"),
        (#"{"name":"p","ports":[]}"#, "manifest field 'version' must be a non-empty string"),
        (#"{"name":"p","version":1,"ports":[]}"#, "manifest field 'version' must be a non-empty string"),
        (#"{"name":"a b","version":"1","ports":[]}"#, "plugin name 'a b' may hold only letters, digits, '-' and '_'"),
        (#"{"name":"p","version":"1"}"#, "manifest field 'ports' must be an array"),
        (#"{"name":"p","version":"1","ports":{}}"#, "manifest field 'ports' must be an array"),
        (
            #"{"name":"p","version":"1","ports":[{"name":"a.b","direction":"sink","types":["*"]}]}"#,
            "ports[0].name must be a non-empty name"
        ),
        (
            #"{"name":"p","version":"1","ports":[{"name":"ok","direction":"sink","types":["*"]},{"direction":"sink","types":["*"]}]}"#,
            "ports[1].name must be"
        ),
        (
            #"{"name":"p","version":"1","ports":[{"name":"x","direction":"both","types":["*"]}]}"#,
            #"port 'x': direction must be "source", "sink" or "service""#
        ),
        (#"{"name":"p","version":"1","ports":[{"name":"x","types":["*"]}]}"#, "port 'x': direction must be"),
        (
            #"{"name":"p","version":"1","ports":[{"name":"x","direction":"sink","types":[]}]}"#,
            "port 'x': types must be a non-empty array of type names"
        ),
        (
            #"{"name":"p","version":"1","ports":[{"name":"x","direction":"sink","types":[""]}]}"#,
            "port 'x': types must be a non-empty array"
        ),
        (#"{"name":"p","version":"1","ports":[{"name":"x","direction":"sink"}]}"#, "port 'x': types must be a non-empty array"),
        (
            #"{"name":"p","version":"1","ports":[{"name":"x","direction":"sink","types":["*"]},{"name":"x","direction":"source","types":["*"]}]}"#,
            "port 'x' is declared twice"
        ),
        (
            #"{"name":"p","version":"1","ports":[{"name":"in","direction":"sink","types":["*"],"feeds":["other"]},{"name":"other","direction":"sink","types":["*"]}]}"#,
            "port 'in' feeds 'other', which is not a source port of this plugin"
        ),
        (
            #"{"name":"p","version":"1","ports":[{"name":"in","direction":"sink","types":["*"],"feeds":["ghost"]}]}"#,
            "port 'in' feeds 'ghost', which is not a source port"
        ),
        (#"{"name":"p","version":"1","ports":[],"types":{"t.A":{"type":"nope"}}}"#, "type 't.A': schema /type: unknown type 'nope'"),
        (
            #"{"name":"p","version":"1","ports":[],"types":{"t.A":{"properties":{"x":{"minLength":"1"}}}}}"#,
            "type 't.A': schema /properties/x/minLength"
        ),
        (#"{"name":"p","version":"1","ports":[],"types":[]}"#, "manifest field 'types' must be an object of schemas"),
        (
            #"{"name":"p","version":"1","ports":[],"config":{"properties":{"n":{"minimum":"x"}}}}"#,
            "config schema /properties/n/minimum: 'minimum' must be a number"
        ),
        (#"{"name":"p","version":"1","ports":[],"config":{"anyOf":[]}}"#, "config schema /anyOf: unsupported keyword"),
    ])
    func refusals(text: String, reason: String) throws {
        let error = try #require(refusal(text), "expected refusal: \(reason)")
        #expect(error.reason.contains(reason), "\(error.reason)")
        #expect(error.description == error.reason)
    }
}

@Suite struct TypeRegistryTests {
    @Test func registersAndRefusesDuplicates() throws {
        var registry = TypeRegistry()
        try registry.register(TypeDefinition(name: "t.A", schema: .any, origin: "plugin one"))
        try registry.register(TypeDefinition(name: "t.B", schema: .any, origin: "plugin one"))
        #expect(registry["t.A"]?.origin == "plugin one")
        #expect(registry["t.C"] == nil)
        #expect(registry.definitions.count == 2)
        do {
            try registry.register(TypeDefinition(name: "t.A", schema: .any, origin: "routes.yaml:3:5"))
            Issue.record("a second definition of t.A must be refused")
        } catch {
            #expect(error.reason == "type 't.A' is defined by plugin one and again by routes.yaml:3:5")
            #expect(error.description == error.reason)
        }
        #expect(registry["t.A"]?.origin == "plugin one")
        #expect(registry.definitions.count == 2)
    }
}
