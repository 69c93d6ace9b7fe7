import SwitchyardConfig
import SwitchyardCore
import Testing

@testable import SwitchyardRuntime

/// Delivery guarantees checked by `validate` from what each instance's description says its
/// ports promise (ABI section 6: `settles`, `confirms`, `at_most_once`).
@Suite struct GuaranteeTests {
    private static func validate(_ yaml: String) throws -> (GraphPlan?, [Diagnostic]) {
        try validated(yaml, plugins: [loadFakePlugin(), loadDescribingPlugin()])
    }

    private static func at(_ line: Int, _ column: Int) -> SwitchyardCore.SourceLocation {
        SwitchyardCore.SourceLocation(file: "g.yaml", line: line, column: column)
    }

    /// `d` describes itself with DESCRIBE; one at-least-once route from its source to its sink.
    private static func graph(_ describe: String, delivery: String = "at-least-once") -> String {
        """
        instances:
          d: { plugin: desc, describe: \(describe) }
        routes:
          - { name: durable, from: d.out, to: d.in, delivery: \(delivery) }
        """
    }

    @Test func endsThatSettleAndConfirmGetNoRemark() throws {
        let (plan, problems) = try Self.validate(Self.graph("{ settles: [out], confirms: [in] }"))
        #expect(problems.isEmpty, "\(problems)")
        #expect(plan?.notes.isEmpty == true, "\(plan?.notes ?? [])")
        #expect(plan?.warnings.isEmpty == true)
        #expect(plan?.instances.first?.confirms == ["in"])
    }

    @Test func endsThatSayNothingAreNotedAtTheirEntries() throws {
        let (plan, problems) = try Self.validate(Self.graph("{}"))
        #expect(problems.isEmpty, "\(problems)")
        let notes = plan?.notes ?? []
        #expect(notes.count == 2, "\(notes)")
        #expect(
            notes.first?.message.hasPrefix("route 'durable' is at-least-once from the spool on, but d.out (plugin desc) does not settle")
                == true)
        #expect(notes.first?.location == Self.at(4, 28))
        #expect(notes.last?.message.hasPrefix("route 'durable' is at-least-once up to d.in (plugin desc), which does not say") == true)
        #expect(notes.last?.location == Self.at(4, 39))
        // The same graph at-most-once promises nothing, so nothing is remarked.
        let (quick, _) = try Self.validate(Self.graph("{}", delivery: "at-most-once"))
        #expect(quick?.notes.isEmpty == true)
    }

    @Test func anAtMostOnceSourceFailsAnAtLeastOnceRouteAtItsFromEntry() throws {
        let (plan, problems) = try Self.validate(
            Self.graph(#"{ confirms: [in], at_most_once: { out: "subscribed at QoS 0; subscribe with `qos: 1`" } }"#))
        #expect(plan == nil)
        #expect(
            problems.map(\.message) == [
                "route 'durable' is at-least-once, but its source d.out (plugin desc) is at-most-once as configured: subscribed at QoS 0; subscribe with `qos: 1`; or make the route `delivery: at-most-once`"
            ])
        #expect(problems.first?.location == Self.at(4, 28))
        // At-most-once, the same ends are fine.
        let (quick, quickProblems) = try Self.validate(
            Self.graph(#"{ at_most_once: { out: "QoS 0", in: "QoS 0" } }"#, delivery: "at-most-once"))
        #expect(quickProblems.isEmpty && quick != nil)
    }

    @Test func anAtMostOnceSinkFailsAnAtLeastOnceRouteAtItsToEntry() throws {
        let (_, problems) = try Self.validate(Self.graph(#"{ settles: [out], at_most_once: { in: "publish.qos is 0" } }"#))
        #expect(problems.count == 1)
        #expect(problems.first?.message.contains("but its sink d.in (plugin desc) is at-most-once as configured: publish.qos is 0") == true)
        #expect(problems.first?.location == Self.at(4, 39))
    }

    @Test func aSettlingSourceFeedingBothDeliveriesWarnsOnTheAtMostOnceRoute() throws {
        let yaml = """
            instances:
              d: { plugin: desc, describe: { settles: [out], confirms: [in] } }
            routes:
              - { name: durable, from: d.out, to: d.in, delivery: at-least-once }
              - { name: quick, from: d.out, to: d.in }
            """
        let (plan, problems) = try Self.validate(yaml)
        #expect(problems.isEmpty, "\(problems)")
        let warnings = plan?.warnings ?? []
        #expect(warnings.count == 1, "\(warnings)")
        #expect(
            warnings.first?.message.hasPrefix(
                "route 'quick' is at-most-once, but its source d.out also feeds at-least-once route 'durable'") == true)
        #expect(warnings.first?.location == Self.at(5, 26))
        #expect(plan?.noteLines.first?.hasPrefix("g.yaml:5:26: warning: route 'quick'") == true)
    }

    @Test func promisesNamingTheWrongPortsAreErrors() throws {
        let (_, problems) = try Self.validate(Self.graph(#"{ settles: [in], confirms: [out], at_most_once: { nowhere: "x" } }"#))
        #expect(
            problems.map(\.message) == [
                "instance 'd' (plugin desc): 'settles' names 'in', which is not a source port",
                "instance 'd' (plugin desc): 'confirms' names 'out', which is not a sink port",
                "instance 'd' (plugin desc): 'at_most_once' names 'nowhere', which is not a port",
            ])
        let (_, malformed) = try Self.validate(Self.graph(#"{ at_most_once: [out] }"#))
        #expect(malformed.first?.message.contains("'at_most_once' must map port names") == true, "\(malformed)")
    }
}
