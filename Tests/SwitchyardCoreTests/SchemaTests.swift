import SwitchyardCore
import Testing

private func compileError(_ json: JSONValue) -> SchemaError? {
    do throws(SchemaError) {
        _ = try Schema(json: json)
        return nil
    } catch {
        return error
    }
}

private func schema(_ json: JSONValue) throws -> Schema { try Schema(json: json) }

private let compileCases: [(JSONValue, String, String)] = [
    (["type": "strnig"], "/type", "unknown type 'strnig'"),
    (["type": 5], "/type", "'type' must be a string"),
    (["type": ["string", "nope"]], "/type", "unknown type"),
    (["frobnicate": true], "/frobnicate", "unsupported keyword 'frobnicate'"),
    (["properties": ["a": ["minimum": "x"]]], "/properties/a/minimum", "'minimum' must be a number"),
    (["properties": ["a": ["properties": ["b": ["oneOf": []]]]]], "/properties/a/properties/b/oneOf", "unsupported keyword"),
    (["properties": []], "/properties", "'properties' must be an object"),
    (["required": [1]], "/required", "'required' must be an array of strings"),
    (["items": 5], "/items", "a schema must be an object or true"),
    (["items": ["type": "bogus"]], "/items/type", "unknown type"),
    (["additionalProperties": ["maxLength": -1]], "/additionalProperties/maxLength", "non-negative integer"),
    (["enum": "a"], "/enum", "'enum' must be an array"),
    (["pattern": "("], "/pattern", "invalid regular expression"),
    (["pattern": 3], "/pattern", "'pattern' must be a string"),
    (["minItems": 1.5], "/minItems", "non-negative integer"),
    (.int(5), "", "a schema must be an object or true, not integer"),
    (.bool(false), "", "not boolean"),
]

private let semanticCases: [(JSONValue, JSONValue, Bool)] = [
    (["type": "integer"], JSONValue.double(2.0), true),
    (["type": "integer"], .double(2.5), false),
    (["type": "number"], .int(3), true),
    (["type": "number"], .string("3"), false),
    (["type": ["string", "null"]], .null, true),
    (["type": ["string", "null"]], .bool(true), false),
    (["enum": [1, "a"]], .double(1.0), true),
    (["enum": [1, "a"]], .string("b"), false),
    (["const": "x"], .string("x"), true),
    (["const": "x"], .string("y"), false),
    (["minimum": 2, "maximum": 4], .int(2), true),
    (["minimum": 2, "maximum": 4], .double(4.5), false),
    (["minimum": 2, "maximum": 4], .int(1), false),
    (["minLength": 2, "maxLength": 3], .string("éé"), true),
    (["minLength": 2, "maxLength": 3], .string("a"), false),
    (["minLength": 2, "maxLength": 3], .string("abcd"), false),
    (["pattern": "[0-9]+"], .string("ab12"), true),
    (["pattern": "^[0-9]+$"], .string("ab12"), false),
    (["minItems": 1, "maxItems": 2], .array([1]), true),
    (["minItems": 1, "maxItems": 2], .array([]), false),
    (["minItems": 1, "maxItems": 2], .array([1, 2, 3]), false),
]

@Suite struct SchemaCompileTests {
    @Test(arguments: compileCases)
    func compileErrorNamesPointer(json: JSONValue, pointer: String, reason: String) throws {
        let error = try #require(compileError(json))
        #expect(error.pointer == pointer)
        #expect(error.reason.contains(reason), "\(error.reason)")
    }

    @Test func errorDescriptionShowsPointer() throws {
        let nested = try #require(compileError(["properties": ["a": ["minimum": "x"]]]))
        #expect(nested.description == "schema /properties/a/minimum: 'minimum' must be a number")
        let root = try #require(compileError(.int(5)))
        #expect(root.description.hasPrefix("schema /: "))
    }

    @Test func acceptsTheSupportedSubset() throws {
        let compiled = try schema([
            "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T", "description": "d",
            "type": ["object", "null"],
            "properties": [
                "s": ["type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$", "default": "x", "format": "hostname"],
                "n": ["type": "number", "minimum": 0, "maximum": 10.5],
                "e": ["enum": [1, "a"]], "c": ["const": true], "secret": ["type": "string", "secret": true],
                "l": ["type": "array", "items": ["type": "integer"], "minItems": 1, "maxItems": 3],
            ],
            "required": ["s"],
            "additionalProperties": false,
            "examples": [],
        ])
        #expect(compiled.types == ["object", "null"])
        #expect(compiled.required == ["s"])
        #expect(compiled.properties.keys.sorted() == ["c", "e", "l", "n", "s", "secret"])
        #expect(compiled.properties["s"]?.defaultValue == "x")
        #expect(compiled.properties["s"]?.pattern == "^[a-z]+$")
        #expect(compiled.summary == "d")
        #expect(compiled.properties["c"]?.enumValues == [true])
    }

    @Test func trueSchemaAcceptsEverything() throws {
        let compiled = try schema(true)
        for value: JSONValue in [nil, 1, "x", [1], ["a": [nil]]] {
            #expect(compiled.violations(of: value).isEmpty)
        }
        #expect(Schema.any.violations(of: ["x": 1]).isEmpty)
    }
}

@Suite struct SchemaViolationTests {
    @Test func reportsEveryViolationWithPath() throws {
        let compiled = try schema([
            "type": "object",
            "properties": [
                "a": ["type": "integer"],
                "b": ["type": "array", "items": ["type": "string"]],
                "c": true,
            ],
            "required": ["c"],
            "additionalProperties": false,
        ])
        let found = compiled.violations(of: ["a": "x", "b": ["ok", 3], "d": 1])
        #expect(found.count == 4)
        #expect(found.contains(SchemaViolation(path: "c", reason: "is required")))
        #expect(found.contains(SchemaViolation(path: "a", reason: "expected integer, found string")))
        #expect(found.contains(SchemaViolation(path: "b[1]", reason: "expected string, found integer")))
        #expect(found.contains(SchemaViolation(path: "d", reason: "is not a known field (known: a, b, c)")))
        #expect(compiled.violations(of: ["a": 1, "b": [], "c": nil]).isEmpty)
    }

    @Test func nestedPathsUseDots() throws {
        let compiled = try schema([
            "properties": ["timer": ["properties": ["interval": ["type": "string"]]]]
        ])
        let found = compiled.violations(of: ["timer": ["interval": 5]])
        #expect(found == [SchemaViolation(path: "timer.interval", reason: "expected string, found integer")])
        #expect(found.first?.description == "timer.interval expected string, found integer")
    }

    @Test func basePathPrefixesMessages() throws {
        let compiled = try schema(["type": "object", "required": ["x"]])
        #expect(compiled.violations(of: [:], at: "cfg") == [SchemaViolation(path: "cfg.x", reason: "is required")])
        let root = compiled.violations(of: 3)
        #expect(root == [SchemaViolation(path: "", reason: "expected object, found integer")])
        #expect(root.first?.description == "expected object, found integer")
    }

    @Test func additionalPropertiesSchemaChecksExtras() throws {
        let compiled = try schema(["properties": ["k": ["type": "string"]], "additionalProperties": ["type": "integer"]])
        #expect(compiled.violations(of: ["k": "v", "x": 1]).isEmpty)
        #expect(compiled.violations(of: ["x": "no"]) == [SchemaViolation(path: "x", reason: "expected integer, found string")])
    }

    @Test func openObjectsAllowExtras() throws {
        let compiled = try schema(["type": "object", "properties": ["k": ["type": "string"]]])
        #expect(compiled.violations(of: ["k": "v", "anything": [1, 2]]).isEmpty)
    }

    @Test(arguments: semanticCases)
    func keywordSemantics(json: JSONValue, value: JSONValue, conforms: Bool) throws {
        #expect(try schema(json).violations(of: value).isEmpty == conforms)
    }

    @Test func boundMessages() throws {
        let compiled = try schema(["minimum": 5, "maxLength": 2])
        #expect(compiled.violations(of: 1) == [SchemaViolation(path: "", reason: "must be at least 5")])
        #expect(compiled.violations(of: "abc") == [SchemaViolation(path: "", reason: "must have at most 2 characters")])
        let enumerated = try schema(["enum": ["a", 1]])
        #expect(enumerated.violations(of: "z").first?.reason == #"must be one of "a", 1"#)
    }
}

@Suite struct SchemaLookupTests {
    let schema: Schema

    init() throws {
        schema = try Schema(json: [
            "type": "object",
            "properties": [
                "name": ["type": "string"],
                "meta": ["type": "object"],
                "list": [
                    "type": "array", "items": ["type": "object", "properties": ["id": ["type": "integer"]], "additionalProperties": false],
                ],
                "closed": ["type": "object", "properties": ["x": ["type": "integer"], "a": true], "additionalProperties": false],
                "extra": ["type": "object", "additionalProperties": ["type": "object", "properties": ["v": ["type": "number"]]]],
            ],
            "additionalProperties": false,
        ])
    }

    @Test func knownField() {
        guard case .known(let member) = schema.lookup(["name"]) else {
            Issue.record("name should be known")
            return
        }
        #expect(member.types == ["string"])
        guard case .known(let id) = schema.lookup(["list", "0", "id"]) else {
            Issue.record("list.0.id should be known")
            return
        }
        #expect(id.types == ["integer"])
        guard case .known(let v) = schema.lookup(["extra", "anything", "v"]) else {
            Issue.record("extra.anything.v should be known through additionalProperties")
            return
        }
        #expect(v.types == ["number"])
        guard case .known = schema.lookup([String]()) else {
            Issue.record("the empty path is the schema itself")
            return
        }
    }

    @Test func openField() {
        guard case .open = schema.lookup(["meta", "whatever", "deep"]) else {
            Issue.record("members of an unconstrained object are open")
            return
        }
    }

    @Test func missingTopLevelField() {
        guard case .missing(let component, let known) = schema.lookup(["nope"]) else {
            Issue.record("nope should be missing")
            return
        }
        #expect(component == "nope")
        #expect(known == ["closed", "extra", "list", "meta", "name"])
    }

    @Test func missingNestedField() {
        guard case .missing(let component, let known) = schema.lookup(["closed", "y"]) else {
            Issue.record("closed.y should be missing")
            return
        }
        #expect(component == "y")
        #expect(known == ["a", "x"])
        guard case .missing(let inItems, let itemKnown) = schema.lookup(["list", "3", "name"]) else {
            Issue.record("list.3.name should be missing")
            return
        }
        #expect(inItems == "name")
        #expect(itemKnown == ["id"])
    }

    @Test func memberOfAScalarIsMissing() {
        guard case .missing(let component, let known) = schema.lookup(["name", "length"]) else {
            Issue.record("a string has no members")
            return
        }
        #expect(component == "length")
        #expect(known.isEmpty)
    }
}
