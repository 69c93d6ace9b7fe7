import SwitchyardConfig
import SwitchyardCore
import Testing

@testable import SwitchyardRuntime

private func validate(_ yaml: String) throws -> (GraphPlan?, [Diagnostic]) {
    try validated(yaml, file: "d.yaml", plugins: [loadFakePlugin(), loadDescribingPlugin()])
}

private func at(_ line: Int, _ column: Int) -> SwitchyardCore.SourceLocation {
    SwitchyardCore.SourceLocation(file: "d.yaml", line: line, column: column)
}

/// `validate` asks each instance's plugin to describe it (ABI section 6) before anything starts.
@Suite struct InstanceDescriptionTests {
    @Test func anErrorThatStartsWithAPointerIsReportedAtThatValue() throws {
        let (plan, diagnostics) = try validate(
            """
            instances:
              d:
                plugin: desc
                fail: "/settings/ports/1: 70000 is not in 0-65535"
                settings: { ports: [80, 70000] }
            """)
        #expect(plan == nil)
        #expect(diagnostics.count == 1, "\(diagnostics)")
        #expect(diagnostics.first?.message == "instance 'd' (plugin desc): /settings/ports/1: 70000 is not in 0-65535")
        #expect(diagnostics.first?.location == at(5, 29))
    }

    @Test func anErrorWithoutAPointerIsReportedAtTheInstance() throws {
        let (_, diagnostics) = try validate("instances:\n  d: { plugin: desc, fail: \"no realm here\" }\n")
        #expect(diagnostics.map(\.message) == ["instance 'd' (plugin desc): no realm here"])
        #expect(diagnostics.first?.location == at(2, 3))
    }

    @Test func describedPortsAndTypesAreWhatRoutesAreCheckedAgainst() throws {
        let describe = """
            { ports: [ { name: out, direction: source, types: [desc.Reading] }, { name: in, direction: sink, types: [desc.Reading] } ],
                          types: { desc.Reading: { type: object, additionalProperties: false, properties: { value: { type: integer } } } } }
            """
        let good = """
            instances:
              d: { plugin: desc, describe: \(describe) }
            routes:
              - { from: d.out, when: "body.value > 3", to: d.in }
            """
        let (plan, problems) = try validate(good)
        #expect(problems.isEmpty, "\(problems)")
        #expect(plan?.types["desc.Reading"]?.origin == "instance 'd' (plugin desc)")
        #expect(plan?.instances.first?.ports.map(\.types) == [["desc.Reading"], ["desc.Reading"]])

        let (_, diagnostics) = try validate(good.replacingOccurrences(of: "body.value", with: "body.valeu"))
        #expect(diagnostics.map(\.message) == ["condition reads body.valeu, but type desc.Reading has no field 'valeu' (fields: value)"])
    }

    /// `redelivers` (a source settled once delivered) is kept for ports that settle, and
    /// refused for any other.
    @Test func aRedeliveringPortMustBeOneThatSettles() throws {
        let ports = "ports: [ { name: out, direction: source, types: [\"*\"] }, { name: side, direction: source, types: [\"*\"] } ]"
        let (plan, problems) = try validate(
            "instances:\n  d: { plugin: desc, describe: { \(ports), settles: [out], redelivers: [out] } }\n")
        #expect(problems.isEmpty, "\(problems)")
        #expect(plan?.instances.first?.redelivers == ["out"])
        let (_, diagnostics) = try validate(
            "instances:\n  d: { plugin: desc, describe: { \(ports), settles: [out], redelivers: [side] } }\n")
        #expect(diagnostics.map(\.message) == ["instance 'd' (plugin desc): 'redelivers' names 'side', which is not among 'settles'"])
    }

    @Test func onlyASinkPortMayDeliverInline() throws {
        let (plan, problems) = try validate("instances:\n  d: { plugin: desc, describe: { delivers_inline: [in] } }\n")
        #expect(problems.isEmpty, "\(problems)")
        #expect(plan?.instances.first?.deliversInline == ["in"])
        let (_, diagnostics) = try validate("instances:\n  d: { plugin: desc, describe: { delivers_inline: [out, in] } }\n")
        #expect(diagnostics.map(\.message) == ["instance 'd' (plugin desc): 'delivers_inline' names 'out', which is not a sink port"])
        let (_, malformed) = try validate("instances:\n  d: { plugin: desc, describe: { delivers_inline: in } }\n")
        #expect(malformed.map(\.message).first?.contains("'delivers_inline' must be an array of port names") == true, "\(malformed)")
    }

    @Test func aTypeOutsideThePluginsNameIsRefused() throws {
        let (_, diagnostics) = try validate(
            """
            instances:
              d: { plugin: desc, describe: { types: { t.Mine: { type: object } } } }
            """)
        #expect(
            diagnostics.map(\.message) == [
                "instance 'd' (plugin desc): type 't.Mine' does not start with 'desc.': the types an instance adds are named after its plugin"
            ])
        #expect(diagnostics.first?.location == at(2, 3))
    }

    @Test func twoInstancesMayAddOneTypeOnlyWithOneSchema() throws {
        let same = """
            instances:
              a: { plugin: desc, describe: { types: { desc.T: { type: object } } } }
              b: { plugin: desc, describe: { types: { desc.T: { type: object } } } }
            """
        #expect(try validate(same).1.isEmpty)
        let (_, diagnostics) = try validate(
            same.replacingOccurrences(
                of: "b: { plugin: desc, describe: { types: { desc.T: { type: object",
                with: "b: { plugin: desc, describe: { types: { desc.T: { type: string"))
        #expect(
            diagnostics.map(\.message) == [
                "instance 'b' (plugin desc): type 'desc.T' is also added by another instance, with a different schema"
            ])
    }

    @Test func aPortTypeNobodyDefinesIsRefused() throws {
        let (_, diagnostics) = try validate(
            "instances:\n  d: { plugin: desc, describe: { ports: [ { name: out, direction: source, types: [desc.Nowhere] } ] } }\n")
        #expect(
            diagnostics.map(\.message) == [
                "instance 'd' (plugin desc): port 'out' carries type 'desc.Nowhere', which neither the plugins nor the route files define"
            ])
    }

    @Test func anOversizedOrMalformedDescriptionIsRefused() throws {
        let (_, huge) = try validate("instances:\n  d: { plugin: desc, huge: true }\n")
        #expect(
            huge.map(\.message) == ["instance 'd' (plugin desc): plugin desc cannot describe it: its description is larger than 16 MiB"])
        let (_, malformed) = try validate("instances:\n  d: { plugin: desc, raw: \"{\\\"ports\\\": 3\" }\n")
        #expect(malformed.count == 1)
        #expect(
            malformed.first?.message.hasPrefix("instance 'd' (plugin desc): plugin desc cannot describe it: its description is unusable")
                == true)
    }

    @Test func aWriteWithALengthAndNoBytesIsRefused() throws {
        let (_, diagnostics) = try validate("instances:\n  d: { plugin: desc, lengthWithoutBytes: true }\n")
        #expect(diagnostics.map(\.message) == ["instance 'd' (plugin desc): describe failed with status 1"])
    }

    @Test func aBareNameOfATypeAnInstanceAddedIsReportedWithItsFullName() throws {
        let (_, diagnostics) = try validate(
            """
            instances:
              d: { plugin: desc, describe: { types: { desc.Reading: { type: object } } } }
            routes:
              - { from: d.out, type: Reading, map: { a: 1 }, to: d.in }
            """)
        #expect(diagnostics.map(\.message) == ["unknown type 'Reading' (did you mean 'desc.Reading'?)"])
        #expect(diagnostics.first?.location == at(4, 26))
    }

    @Test func aVersionOnePluginHasItsManifestsPorts() throws {
        let (plan, diagnostics) = try validate("instances:\n  a: { plugin: fake }\n")
        #expect(diagnostics.isEmpty)
        #expect(plan?.instances.first?.declaredPorts.map(\.name) == ["out", "in", "any", "opt", "either"])
    }
}
