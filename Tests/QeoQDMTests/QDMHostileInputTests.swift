import Foundation
import QeoQDM
import Testing

/// QDM files are input: whatever they hold, reading them ends with a model or an error that
/// names the file and line, never a crash, a hang or unbounded memory. The first case came
/// from `scripts/fuzz qdm`.
@Suite struct QDMHostileInputTests {
    private func error(_ text: String) -> QDMError? {
        do throws(QDMError) {
            _ = try QDMParser.parse(text, file: "hostile.xml")
            return nil
        } catch {
            return error
        }
    }

    /// Foundation's XMLParser reads the missing data of `<?name?>` through a null pointer.
    @Test(arguments: ["<?xm?>\n<types/>", "<?xml version=\"1.0\"?>\n<types>\n<?pi?></types>", "<types><?pi data?></types>"])
    func processingInstructionsAreRefused(text: String) throws {
        let refusal = try #require(error(text))
        #expect(refusal.reason.contains("processing instruction"))
        #expect(refusal.location?.file == "hostile.xml")
    }

    @Test func theDeclarationCommentsAndCDATAAreFine() {
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- <?not a pi?> <!DOCTYPE x> -->
            <types><module name="m"><struct name="S"><member name="a" type="string"><doc><![CDATA[<?x?>]]></doc></member></struct></module></types>
            """
        #expect(error(text) == nil)
    }

    /// 8 MB of near-misses: a quadratic screen would run for days, so the time limit (not a
    /// speed assertion: a loaded machine takes seconds) is what a regression trips.
    @Test(.timeLimit(.minutes(1))) func screeningALargeFileIsLinear() {
        let text = "<types><!--" + String(repeating: "<?- ", count: 2_000_000) + "--></types>"
        #expect(error(text) == nil)
    }

    @Test func entityDefinitionsAreRefusedWithTheirLine() throws {
        let text = """
            <?xml version="1.0"?>
            <!DOCTYPE types [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <types>&b;</types>
            """
        let refusal = try #require(error(text))
        #expect(refusal.reason.contains("DOCTYPE"))
        #expect(refusal.location == QDMLocation(file: "hostile.xml", line: 2))
    }

    /// Each struct uses the previous one ten times: 10^12 members once schemas, checks and DDS
    /// programs expand them inline.
    /// Expanding them would take 10^12 steps: the refusal comes from counting, and the time
    /// limit is what an expansion would trip.
    @Test(.timeLimit(.minutes(1))) func structsThatMultiplyAreRefusedQuickly() throws {
        var structs = "<struct name=\"S0\"><member name=\"x\" type=\"int32\"/></struct>\n"
        for level in 1...12 {
            let members = (0..<10).map { "<member name=\"m\($0)\" type=\"nonBasic\" nonBasicTypeName=\"S\(level - 1)\"/>" }.joined()
            structs += "<struct name=\"S\(level)\">\(members)</struct>\n"
        }
        let refusal = try #require(error("<types><module name=\"m\">\n\(structs)</module></types>"))
        #expect(refusal.reason.contains("expands to more than \(QDMParser.maximumExpandedMembers) members"))
        // S5, on line 7, is the first past the limit: 10^5 members.
        #expect(refusal.location?.line == 7)
    }

    @Test func deepNestingIsRefused() throws {
        var structs = "<struct name=\"S0\"><member name=\"x\" type=\"int32\"/></struct>\n"
        for level in 1...100 {
            structs += "<struct name=\"S\(level)\"><member name=\"m\" type=\"nonBasic\" nonBasicTypeName=\"S\(level - 1)\"/></struct>\n"
        }
        let refusal = try #require(error("<types><module name=\"m\">\n\(structs)</module></types>"))
        #expect(refusal.reason.contains("nested more than \(QDMParser.maximumNestingDepth) structs deep"))
    }

    @Test func anIncludeOfADeviceIsRefused() throws {
        #expect(throws: QDMError("included file /dev/zero is not a regular file", at: QDMLocation(file: "/tmp/q/hostile.xml", line: 2))) {
            _ = try QDMParser.parse("<types>\n<include file=\"../../dev/zero\"/></types>", file: "/tmp/q/hostile.xml")
        }
    }
}
