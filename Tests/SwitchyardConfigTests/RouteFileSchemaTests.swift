import SwitchyardConfig
import SwitchyardCore
import Testing

/// `switchyard schema`'s document: what the loader knows, in JSON Schema terms.
@Suite struct RouteFileSchemaTests {
    @Test func theTopLevelKeysAreTheLoadersAndUnknownOnesAreRefused() throws {
        let document = RouteFileSchema.document()
        #expect(document["$schema"] == .string(RouteFileSchema.dialect))
        #expect(document["additionalProperties"] == .bool(false))
        let keys = try #require(document["properties"]?.objectValue?.keys).sorted()
        #expect(keys == RouteFileSchema.topLevel.map(\.name).sorted())
        // The loader's own complaint lists the same keys.
        let (_, problems) = ConfigLoader(environment: [:]).load(sources: [(file: "r.yaml", text: "rutes: []\n")])
        let message = try #require(problems.first?.message)
        for key in keys { #expect(message.contains(key), "\(message)") }
    }

    @Test func eachPluginsConfigurationIsAVariantOfAnInstanceAndVariablesPassScalars() throws {
        let config: JSONValue = [
            "type": "object", "properties": ["url": ["type": "string", "pattern": "^mqtt://"]], "additionalProperties": false,
        ]
        let document = RouteFileSchema.document(plugins: [("mqtt", config)])
        let instance = try #require(document["properties"]?["instances"]?["additionalProperties"])
        #expect(instance["properties"]?["plugin"]?["anyOf"]?.arrayValue?.first?["enum"] == ["mqtt"])
        let variant = try #require(instance["allOf"]?.arrayValue?.first)
        #expect(variant["if"]?["properties"]?["plugin"]?["const"] == "mqtt")
        let url = try #require(variant["then"]?["properties"]?["url"])
        // `url: "${BROKER_URL}"` is checked when the file is loaded, not as written.
        #expect(url["anyOf"]?.arrayValue?.count == 2, "\(url)")
        #expect(variant["then"]?["properties"]?["log_level"] != nil)
        #expect(variant["then"]?["additionalProperties"] == .bool(false))
    }
}
