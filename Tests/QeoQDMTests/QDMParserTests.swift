import Foundation
import QeoQDM
import SwitchyardCore
import Testing

/// Reading the sample QDMs (test data written for this project after Qeo's samples), resolving
/// references and includes, and the errors for files that are wrong.
@Suite struct QDMParserTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("QDM")
    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    @Test func theSimpleChatTypes() throws {
        let model = try QDMParser.load([Self.path("QSimpleChat_ChatMessage.xml"), Self.path("QSimpleChat_ChatParticipant.xml")])
        let message = try #require(model.structs["org.qeo.sample.simplechat.ChatMessage"])
        #expect(message.behavior == .event)
        #expect(message.members.map(\.name) == ["from", "message"])
        #expect(message.members.map(\.kind) == [.string, .string])
        #expect(message.keys.isEmpty)
        #expect(message.ddsTypeName == "org::qeo::sample::simplechat::ChatMessage")
        #expect(message.ddsTopicName == "org/qeo/sample/simplechat/ChatMessage")
        let participant = try #require(model.structs["org.qeo.sample.simplechat.ChatParticipant"])
        #expect(participant.behavior == .state)
        #expect(participant.keys.map(\.name) == ["name"])
        // An unqualified reference resolves in the member's own module.
        #expect(participant.members[1].kind == .enumeration("org.qeo.sample.simplechat.ChatState"))
        #expect(model.enums["org.qeo.sample.simplechat.ChatState"]?.enumerators == ["AVAILABLE", "IDLE", "BUSY", "AWAY"])
        #expect(participant.location == QDMLocation(file: Self.path("QSimpleChat_ChatParticipant.xml"), line: 12))
    }

    @Test func includesAndQualifiedReferences() throws {
        // Both include qeo_types.xml: it is read once, so DeviceId is not "defined twice".
        let model = try QDMParser.load([Self.path("QGauge_NetStatMessage.xml"), Self.path("qeo_DeviceInfo.xml")])
        let netStat = try #require(model.structs["org.qeo.sample.gauge.NetStatMessage"])
        #expect(netStat.keys.map(\.name) == ["deviceId", "ifName"])
        #expect(netStat.members[0].kind == .structure("org.qeo.system.DeviceId"))
        #expect(netStat.members[2].kind == .int64)
        let info = try #require(model.structs["org.qeo.system.DeviceInfo"])
        #expect(info.members.last?.kind == .structure("org.qeo.system.RealmInfo"))
        #expect(model.structs["org.qeo.system.DeviceId"]?.behavior == nil)
        #expect(model.topics.map(\.name) == ["org.qeo.sample.gauge.NetStatMessage", "org.qeo.system.DeviceInfo"])
    }

    @Test func sequencesAndEveryBasicType() throws {
        let model = try QDMParser.parse(
            """
            <types version="0.1">
              <module name="t">
                <struct name="All" behavior="event">
                  <member name="b" type="boolean"/><member name="o" type="byte"/><member name="s" type="int16"/>
                  <member name="i" type="int32"/><member name="l" type="int64"/><member name="f" type="float32"/>
                  <member name="t" type="string"/><member name="list" type="string" sequenceMaxLength="-1"/>
                </struct>
              </module>
            </types>
            """)
        let kinds = model.structs["t.All"]?.members.map(\.kind)
        #expect(kinds == [.boolean, .byte, .int16, .int32, .int64, .float32, .string, .sequence(.string)])
    }

    /// The file and line of each mistake, and what it is.
    @Test(arguments: [
        (
            #"<types><module name="m"><struct name="S" behavior="event"><member name="x" type="nonBasic" nonBasicTypeName="Nope"/></struct></module></types>"#,
            "<qdm>:1: member x: unknown type Nope"
        ),
        (
            "<types>\n<module name=\"m\">\n<struct name=\"S\" behavior=\"sometimes\"><member name=\"x\" type=\"int32\"/></struct></module></types>",
            "<qdm>:3: struct S: behavior=\"sometimes\" is not \"event\" or \"state\""
        ),
        (
            "<types><module name=\"m\">\n\n<struct name=\"S\"><member name=\"x\" type=\"int128\"/></struct></module></types>",
            "<qdm>:3: member x: type \"int128\" is not boolean, byte, int16, int32, int64, float32, string or nonBasic"
        ),
        (
            "<types><module name=\"m\"><struct name=\"A\"><member name=\"b\" type=\"nonBasic\" nonBasicTypeName=\"B\"/></struct>\n"
                + "<struct name=\"B\"><member name=\"a\" type=\"nonBasic\" nonBasicTypeName=\"A\"/></struct></module></types>",
            "<qdm>:1: m.A contains itself: m.A → m.B → m.A"
        ),
        (
            "<types><module name=\"m\"><struct name=\"S\"><member name=\"x\" type=\"int32\" sequenceMaxLength=\"10\"/></struct></module></types>",
            "<qdm>:1: member x: sequenceMaxLength=\"10\" is not supported (only -1, unbounded)"
        ),
        ("<schema/>", "<qdm>:1: the root element is <schema>, not <types>"),
        (
            "<types><module name=\"m\"><struct name=\"S\"><member name=\"x\" type=\"int32\"></struct></module></types>",
            "<qdm>:1: not a QDM file"
        ),
        (
            "<types><module name=\"m\"><struct name=\"S\"><member name=\"x\" type=\"int32\"/></struct>\n<enum name=\"S\"><enumerator name=\"A\"/></enum></module></types>",
            "<qdm>:2: m.S is already defined at <qdm>:1"
        ),
    ])
    func mistakesNameTheFileAndLine(text: String, expected: String) {
        do {
            _ = try QDMParser.parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.hasPrefix(expected), "\(error)")
        }
    }

    @Test func aMissingIncludeNamesTheIncludingLine() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("qdm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("a.xml").path
        try "<types>\n  <include file=\"missing.xml\"/>\n</types>\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(
            throws: QDMError(
                "included file \(directory.appendingPathComponent("missing.xml").path) cannot be read", at: QDMLocation(file: file, line: 2)
            )
        ) {
            _ = try QDMParser.load([file])
        }
    }
}

/// JSON bodies checked and normalised against QDM structs, and the schemas the registry gets.
@Suite struct QDMJSONTests {
    static let model: QDMModel = {
        let directory = QDMParserTests.directory.path
        return
            (try? QDMParser.load([
                directory + "/QSimpleChat_ChatParticipant.xml", directory + "/QGauge_NetStatMessage.xml",
            ])) ?? QDMModel()
    }()

    @Test func conformingValuesComeBackCanonical() throws {
        let participant = try Self.model.conform(["name": "alice", "state": 2], to: "org.qeo.sample.simplechat.ChatParticipant")
        #expect(participant == ["name": "alice", "state": "BUSY"])
        let netStat: JSONValue = [
            "deviceId": ["upper": 1, "lower": 2], "ifName": "eth0", "bytesIn": 10, "packetsIn": 1, "bytesOut": 20,
            "packetsOut": 2, "timestamp": 1_700_000_000_000,
        ]
        #expect(try Self.model.conform(netStat, to: "org.qeo.sample.gauge.NetStatMessage") == netStat)
    }

    @Test(arguments: [
        (
            #"{"name": "alice", "state": "ASLEEP"}"#,
            "ChatParticipant.state: expected one of AVAILABLE, IDLE, BUSY, AWAY, got string \"ASLEEP\""
        ),
        (#"{"name": 7, "state": "IDLE"}"#, "ChatParticipant.name: expected a string, got integer 7"),
        (#"{"name": "alice"}"#, "ChatParticipant.state: missing"),
        (#"{"name": "alice", "state": "IDLE", "mood": "ok"}"#, "ChatParticipant.mood: not a member of ChatParticipant"),
        (#"["alice"]"#, "ChatParticipant: expected an object (ChatParticipant), got array"),
    ])
    func wrongValuesAreClearErrors(body: String, expected: String) throws {
        let value = try JSONValue(parsing: body)
        do {
            _ = try Self.model.conform(value, to: "org.qeo.sample.simplechat.ChatParticipant")
            Issue.record("accepted \(body)")
        } catch {
            #expect(error.description.hasPrefix(expected), "\(error)")
        }
    }

    @Test func outOfRangeIntegersAreRefused() throws {
        let value: JSONValue = [
            "deviceId": ["upper": 1, "lower": "two"], "ifName": "eth0", "bytesIn": 1, "packetsIn": 1, "bytesOut": 1, "packetsOut": 1,
            "timestamp": 1,
        ]
        #expect(throws: QDMError("NetStatMessage.deviceId.lower: expected an int64, got string \"two\"", at: nil)) {
            _ = try Self.model.conform(value, to: "org.qeo.sample.gauge.NetStatMessage")
        }
    }

    @Test func theSchemaIsClosedAndComplete() {
        let schema = Self.model.schema(of: "org.qeo.sample.simplechat.ChatParticipant")
        #expect(schema["additionalProperties"] == false)
        #expect(schema["required"] == ["name", "state"])
        #expect(schema["properties"]?["state"]?["enum"] == ["AVAILABLE", "IDLE", "BUSY", "AWAY"])
    }
}
