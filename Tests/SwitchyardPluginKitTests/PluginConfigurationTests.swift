import SwitchyardCore
import SwitchyardPluginKit
import Testing

/// A configuration with every shape the derivation handles: nesting, arrays, maps, defaults,
/// bounds, named values, durations and a union-shaped value.
private struct SampleConfiguration: PluginConfiguration {
    enum Write: String, ConfigurationEnum { case request, command }

    struct Listen: Decodable, Sendable {
        var host: String
        var port: UInt16

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            host = try container.decode(.host, default: "0.0.0.0")
            port = try container.decode(.port, default: 5060)
        }

        private enum CodingKeys: CodingKey { case host, port }
    }

    struct Button: Decodable, Sendable {
        var characteristic: String
        var button: Int?
    }

    var listen: Listen
    var buttons: [Button]
    var pressKinds: [String: String]
    var write: Write
    var maxInFlight: Int
    var scanTimeout: Duration
    var tls: TLSSettings?

    static let descriptions = ["/listen/port": "the port to listen on"]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        listen = try container.decode(Listen.self, forKey: .listen)
        buttons = try container.decode(.buttons, default: [])
        pressKinds = try container.decode(.pressKinds, default: [:])
        write = try container.decode(.write, default: .request)
        maxInFlight = try container.decode(.maxInFlight, default: 256, in: 1...65536)
        scanTimeout = try container.decode(.scanTimeout, default: .seconds(20), atLeast: .milliseconds(10))
        tls = try container.decodeIfPresent(TLSSettings.self, forKey: .tls)
    }

    func validate() throws {
        guard write == .request || buttons.isEmpty else { throw ConfigurationError(at: "/write", "command writes take no buttons") }
    }

    private enum CodingKeys: CodingKey { case listen, buttons, pressKinds, write, maxInFlight, scanTimeout, tls }
}

@Suite struct PluginConfigurationTests {
    private func error(_ config: JSONValue) -> String? {
        do {
            _ = try SampleConfiguration(config: config)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func decodesWithDefaults() throws {
        let config = try SampleConfiguration(config: ["listen": ["port": 5070], "press_kinds": ["1": "short"], "scan_timeout": "500ms"])
        #expect(config.listen.host == "0.0.0.0")
        #expect(config.listen.port == 5070)
        #expect(config.pressKinds == ["1": "short"])
        #expect(config.write == .request)
        #expect(config.maxInFlight == 256)
        #expect(config.scanTimeout == .milliseconds(500))
        #expect(config.tls == nil)
    }

    @Test func errorsStartWithTheJSONPointerOfTheValue() {
        #expect(error(["listen": ["port": 70000]]) == "/listen/port: 70000 is not in 0-65535")
        #expect(error(["listen": ["port": "x"]]) == "/listen/port: expected integer, found string")
        #expect(error([:]) == "/listen: is required")
        #expect(error(["listen": [:], "buttons": [["characteristic": "a"], ["button": 2]]]) == "/buttons/1/characteristic: is required")
        #expect(error(["listen": [:], "write": "reliable"]) == "/write: 'reliable' is not request or command")
        #expect(error(["listen": [:], "max_in_flight": 0]) == "/max_in_flight: 0 is not in 1-65536")
        #expect(error(["listen": [:], "scan_timeout": "soon"]) == "/scan_timeout: 'soon' is not a duration like 500ms, 10s or 5m")
        #expect(error(["listen": [:], "scan_timeout": "1ms"]) == "/scan_timeout: at least 10ms")
        #expect(error(["listen": [:], "tls": ["cert_file": "a.pem"]]) == "/tls: give both cert_file and key_file, or neither")
        #expect(
            error(["listen": [:], "write": "command", "buttons": [["characteristic": "a"]]]) == "/write: command writes take no buttons")
    }

    @Test func theSchemaIsDerivedFromTheSameType() throws {
        let schema = SampleConfiguration.jsonSchema
        #expect(schema["type"] == "object")
        #expect(schema["additionalProperties"] == false)
        #expect(schema["required"] == ["listen"])
        let properties = try #require(schema["properties"])
        #expect(
            properties["listen"]?["properties"]?["port"] == [
                "type": "integer", "minimum": 0, "maximum": 65535, "default": 5060, "description": "the port to listen on",
            ])
        #expect(properties["listen"]?["required"] == nil)
        #expect(properties["buttons"]?["items"]?["required"] == ["characteristic"])
        #expect(properties["buttons"]?["items"]?["properties"]?["button"] == ["type": "integer"])
        #expect(properties["press_kinds"] == ["type": "object", "additionalProperties": ["type": "string"], "default": [:]])
        #expect(properties["write"] == ["enum": ["request", "command"], "default": "request"])
        #expect(properties["max_in_flight"] == ["type": "integer", "minimum": 1, "maximum": 65536, "default": 256])
        #expect(properties["scan_timeout"] == ["type": ["string", "integer"], "default": "20s"])
        #expect(properties["tls"]?["properties"]?["verify"] == ["type": "boolean", "default": true])
        // The router compiles it like any manifest's schema.
        _ = try Schema(json: schema)
    }
}

/// The shared value types: a checked string, a backoff section, a size, and a value with a
/// short form.
private struct SharedShapesConfiguration: PluginConfiguration {
    enum Even: ConfigurationStringRule {
        static let placeholder = "00"

        static func checked(_ text: String) throws(PluginError) -> String {
            guard text.count.isMultiple(of: 2) else { throw PluginError("'\(text)' has an odd length") }
            return text.uppercased()
        }
    }

    enum Retry: BackoffPolicy {
        static let initialDelay: Duration = .seconds(1)
        static let maxDelay: Duration = .seconds(60)
        static let shortest: Duration = .milliseconds(10)
        static let longest: Duration? = .seconds(3600)
    }

    /// `"host:port"` or `{host, port}`.
    struct Endpoint: ConfigurationValue {
        var host = "localhost"

        init() {}

        init(from decoder: any Decoder) throws {
            if let text = try ConfigurationJSON(from: decoder).value.stringValue {
                host = text
                return
            }
            host = try decoder.container(keyedBy: CodingKeys.self).decode(.host, default: host)
        }

        private enum CodingKeys: CodingKey { case host }

        static var configurationSchema: JSONValue { ConfigurationSchema.of(Self.self, orAlso: "string") }
        static var schemaPlaceholder: Self { Self() }
    }

    var code: String?
    var retry: BackoffSettings<Retry>
    var memory: Int
    var endpoint: Endpoint

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decodeIfPresent(CheckedString<Even>.self, forKey: .code)?.text
        retry = try container.decode(.retry, default: BackoffSettings<Retry>())
        memory = try container.decode(.memory, defaultBytes: 16 << 20, atLeastBytes: 1024)
        endpoint = try container.decodeSection(Endpoint.self, forKey: .endpoint)
    }

    private enum CodingKeys: CodingKey { case code, retry, memory, endpoint }
}

@Suite struct SharedConfigurationShapesTests {
    private func error(_ config: JSONValue) -> String? {
        do {
            _ = try SharedShapesConfiguration(config: config)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func readsEachShape() throws {
        let config = try SharedShapesConfiguration(config: [
            "code": "ab", "retry": ["initial_delay": "250ms"], "memory": "64KiB", "endpoint": "example.org",
        ])
        #expect(config.code == "AB")
        #expect(config.retry.initialDelay == .milliseconds(250))
        #expect(config.retry.maxDelay == .seconds(60))
        #expect(config.memory == 64 << 10)
        #expect(config.endpoint.host == "example.org")
        #expect(try SharedShapesConfiguration(config: ["endpoint": ["host": "a"]]).endpoint.host == "a")
        let defaults = try SharedShapesConfiguration(config: [:])
        #expect(defaults.memory == 16 << 20)
        // An absent section is read as {}: its members take their own defaults.
        #expect(defaults.endpoint.host == "localhost")
    }

    @Test func eachShapeRefusesWithThePointer() {
        #expect(error(["code": "abc"]) == "/code: 'abc' has an odd length")
        #expect(error(["retry": ["initial_delay": "1ms"]]) == "/retry/initial_delay: at least 10ms")
        #expect(error(["retry": ["max_delay": "2h"]]) == "/retry/max_delay: at most 1h")
        #expect(error(["memory": "1000"]) == "/memory: must be a size of at least 1KiB, like 16MiB")
        #expect(error(["memory": "lots"]) == "/memory: 'lots' is not a size like 64KiB")
        #expect(error(["endpoint": ["host": 1]]) == "/endpoint/host: expected string, found integer")
    }

    @Test func eachShapeHasItsSchema() throws {
        let properties = try #require(SharedShapesConfiguration.jsonSchema["properties"])
        #expect(properties["code"] == ["type": "string"])
        #expect(properties["retry"]?["properties"]?["max_delay"] == ["type": ["string", "integer"], "default": "1m"])
        #expect(properties["memory"] == ["type": ["string", "integer"], "default": "16MiB"])
        #expect(properties["endpoint"]?["type"] == ["object", "string"])
        #expect(SharedShapesConfiguration.jsonSchema["required"] == nil)
        #expect(properties["endpoint"]?["properties"]?["host"] == ["type": "string", "default": "localhost"])
        _ = try Schema(json: SharedShapesConfiguration.jsonSchema)
    }
}
