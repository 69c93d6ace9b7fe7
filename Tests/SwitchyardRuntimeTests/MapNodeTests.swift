import SwitchyardCore
import SwitchyardRouting
import Testing

@testable import SwitchyardRuntime

/// `MapNode.write` writes what rendering the value and serialising it writes, without the value.
@Suite struct MapNodeTests {
    private func template(_ text: String) throws -> MapNode { .template(try Template(parsing: text, at: nil)) }

    private let envelope = Envelope(
        type: "t.A", subject: "room/1", body: Array(#"{"sensor":"s1","value":21.5,"tags":["a","b"],"note":"h\u00e9 \"x\""}"#.utf8))

    /// The bytes `write` produces and the bytes of the rendered value, for one envelope.
    private func bothWays(_ node: MapNode) -> (written: String, rendered: String) {
        var scope = EnvelopeScope(envelope)
        var bytes: [UInt8] = []
        node.write(&scope, to: &bytes)
        var renderScope = EnvelopeScope(envelope)
        return (String(decoding: bytes, as: UTF8.self), node.render(&renderScope).serialized())
    }

    @Test func aCompiledObjectIsWrittenAsItsRenderedValueIs() throws {
        let node = MapNode.object(
            MapNode.sortedMembers([
                ("v", try template("{{body.value}}")),
                ("sensor", try template("{{body.sensor}}")),
                (
                    "nested",
                    .object(
                        MapNode.sortedMembers([("z", .literal(.int(1))), ("a", .array([try template("{{subject}}"), .literal(.null)]))]))
                ),
                ("note", try template("{{body.note}}")),
                ("tags", try template("{{body.tags}}")),
                ("missing", try template("{{body.absent}}")),
            ]))
        let (written, rendered) = bothWays(node)
        #expect(written == rendered)
        #expect(written.hasPrefix(#"{"missing":"#), "keys are written sorted: \(written)")
    }

    /// Members built elsewhere (not sorted, or with a key twice) are written as the dictionary
    /// the value would be: sorted, the last of a repeated key winning.
    @Test(arguments: [
        [("b", MapNode.literal(.int(2))), ("a", .literal(.int(1)))],
        [("a", MapNode.literal(.int(1))), ("a", .literal(.int(3))), ("b", .literal(.int(2)))],
    ])
    func membersNotSortedOrRepeatedAreWrittenAsTheirValue(members: [(String, MapNode)]) {
        let (written, rendered) = bothWays(.object(members))
        #expect(written == rendered)
    }

    @Test func sortingKeepsMembersThatRepeatAKeyInTheirOrder() {
        let members: [(String, MapNode)] = [("b", .literal(.int(1))), ("a", .literal(.int(2))), ("b", .literal(.int(3)))]
        #expect(MapNode.sortedMembers(members).map(\.0) == ["b", "a", "b"])
        #expect(bothWays(.object(MapNode.sortedMembers(members))).written == #"{"a":2,"b":3}"#)
    }
}
