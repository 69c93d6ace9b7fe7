import Foundation
import Testing

@testable import SwitchyardRuntime

/// The host's hold service (ABI section 10) through a real plugin, without a shared store:
/// the router's own holds grant a free name at once and a taken one when its holder lets go.
@Suite struct HoldServiceTests {
    @Test func aHoldIsGrantedInTurnAndNamesAreChecked() async throws {
        let directory = try temporaryDirectory("holds")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = "\(directory)/holds.txt"
        let plan = try planWithTestKit(
            """
            instances:
              holder: { plugin: testkit, hold_check: { path: "\(output)" } }
            """)
        let router = Router(plan: plan, logger: quietLogger)
        try router.start()
        router.shutdown(drainTimeout: .seconds(5))
        let answers = try #require(await answers(in: output))
        #expect(answers["events"] == "first:granted,other:granted,release,second:granted")
        #expect(answers["long_name"]?.hasSuffix("the name is over the router's limit") == true)
    }
}
