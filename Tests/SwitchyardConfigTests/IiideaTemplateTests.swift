import SwitchyardConfig
import SwitchyardCore
import Testing

private func load(_ text: String) -> (GraphConfig, [Diagnostic]) {
    ConfigLoader(environment: [:]).load(sources: [(file: "t.yaml", text: text)])
}

/// `iiidea_templates:`, the store's catalog: parsing and search.
@Suite struct IiideaTemplateTests {
    @Test func aTemplateIsAnIiideaWithADescriptionAndTags() throws {
        let (config, diagnostics) = load(
            """
            iiidea_templates:
              - id: note
                title: Note the weather
                description: Writes what the sensor says
                tags: [Weather, notes]
                trigger: { port: sensor.readings, when: "body.t > 3" }
                service: { piece: template, preferences: { text: "{{body.t}}" } }
                action:  { port: out.write, preferences: { level: high } }
              - { id: bare, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d } }
            """)
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(config.iiideas.isEmpty, "a template is no iiidea")
        #expect(config.iiideaTemplates.map(\.id) == ["note", "bare"])
        let note = try #require(config.iiideaTemplates.first)
        #expect(note.description == "Writes what the sensor says")
        #expect(note.tags == ["Weather", "notes"])
        #expect(note.declaration.title == "Note the weather")
        #expect(note.declaration.when?.value == "body.t > 3")
        #expect(note.declaration.servicePreferences?.json == ["text": "{{body.t}}"])
        #expect(note.declaration.actionPreferences?.json == ["level": "high"])
        #expect(note.declaration.origin == .routeFile)
        #expect(config.iiideaTemplates[1].tags.isEmpty && config.iiideaTemplates[1].description == nil)
    }

    @Test func problemsAreNamedAndTheTemplateLeftOut() throws {
        let (config, diagnostics) = load(
            """
            iiidea_templates:
              - { id: one, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d }, colour: red }
              - { id: two, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d }, tags: [ok, { no: 1 }] }
              - { id: three, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d }, tags: just-one }
              - { id: four, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d }, description: [x] }
              - { id: five, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d } }
              - { id: five, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d } }
            iiideas:
              - { id: six, trigger: { port: a.b }, service: { piece: pass }, action: { port: c.d }, tags: [x] }
            """)
        #expect(config.iiideaTemplates.map(\.id) == ["five"])
        #expect(config.iiideas.isEmpty, "tags belong to templates only")
        let messages = diagnostics.map(\.message)
        #expect(
            messages.contains {
                $0.hasPrefix("unknown key 'colour' in iiidea template (expected: id, title") && $0.contains("description, tags")
            })
        #expect(messages.filter { $0 == "'tags' must be a list of strings" }.count == 2, "\(messages)")
        #expect(messages.contains("'description' must be a string"))
        #expect(messages.contains { $0.hasPrefix("iiidea template 'five' is already defined at t.yaml:6") }, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("unknown key 'tags' in iiidea (expected:") })
        let tags = try #require(diagnostics.first { $0.message == "'tags' must be a list of strings" })
        #expect(tags.location?.line == 3)
    }

    @Test func iiideaTemplatesMustBeAList() {
        let (config, diagnostics) = load("iiidea_templates: { id: x }\n")
        #expect(config.iiideaTemplates.isEmpty)
        #expect(diagnostics.map(\.message) == ["'iiidea_templates' must be a list of { id, trigger, service, action }"])
    }

    @Test(arguments: [
        ("", true), ("weather", true), ("WEATHER notes", true), ("sensor says", true), ("note", true), ("temperature", false),
        ("weather missing", false), ("  ", true),
    ])
    func aSearchMatchesEveryWordInTheIdTitleDescriptionOrTags(query: String, matches: Bool) throws {
        let (config, _) = load(
            """
            iiidea_templates:
              - id: note
                title: Note the weather
                description: Writes what the sensor says
                tags: [Rain, notes]
                trigger: { port: a.b }
                service: { piece: pass }
                action: { port: c.d }
            """)
        let template = try #require(config.iiideaTemplates.first)
        #expect(template.matches(query) == matches)
    }
}
