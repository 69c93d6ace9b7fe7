import MQTTCodec
import Testing

@Suite struct MQTTTopicTests {
    @Test(arguments: [
        // Multi-level wildcard.
        ("sport/tennis/player1/#", "sport/tennis/player1", true),
        ("sport/tennis/player1/#", "sport/tennis/player1/ranking", true),
        ("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true),
        ("sport/#", "sport", true),
        ("sport/#", "sports", false),
        ("#", "sport/tennis", true),
        ("#", "/", true),
        // Single-level wildcard.
        ("sport/tennis/+", "sport/tennis/player1", true),
        ("sport/tennis/+", "sport/tennis/player1/ranking", false),
        ("sport/+", "sport", false),
        ("sport/+", "sport/", true),
        ("+/+", "/finance", true),
        ("/+", "/finance", true),
        ("+", "/finance", false),
        ("+", "finance", true),
        ("a/+/c", "a/b/c", true),
        ("a/+/c", "a//c", true),
        ("a/+/c", "a/b/d", false),
        ("+/+/#", "a/b", true),
        ("+/b/#", "a/b/c/d", true),
        // Literal levels: exact, case-sensitive, byte-wise.
        ("a/b", "a/b", true),
        ("a/b", "a/B", false),
        ("a/b", "a/b/c", false),
        ("a/b/c", "a/b", false),
        ("a/b/", "a/b", false),
        ("caf\u{E9}", "cafe\u{301}", false),
        // Topics starting with $.
        ("#", "$SYS/uptime", false),
        ("+/uptime", "$SYS/uptime", false),
        ("$SYS/#", "$SYS/uptime", true),
        ("$SYS/+", "$SYS/uptime", true),
        ("$SYS/uptime", "$SYS/uptime", true),
        ("a/#", "a/$b", true),
        // Shared subscriptions match like the filter after the share name.
        ("$share/group/sport/#", "sport/tennis", true),
        ("$share/group/+", "x", true),
        ("$share/group/a", "a", true),
        ("$share/group/a", "b", false),
        ("$share/group/#", "$SYS/x", false),
        ("$share/group", "group", false),
        ("$share//a", "a", false),
        ("$share/g+/a", "a", false),
        // Invalid filters and topic names match nothing.
        ("a/#/b", "a/x/b", false),
        ("", "a", false),
        ("a", "", false),
        ("a/+", "a/+", false),
        ("#", "a/#", false),
    ])
    func matching(filter: String, topic: String, expected: Bool) {
        #expect(MQTTTopic.matches(filter: filter, topic: topic) == expected)
    }

    @Test(arguments: ["a", "/", "a/b", "$SYS/x", "a b/ü", "//"])
    func validTopicNames(name: String) {
        #expect(MQTTTopic.problem(withTopicName: name) == nil)
    }

    @Test(arguments: ["", "a/+", "#", "a/#", "sport+", "a\u{0}b"])
    func invalidTopicNames(name: String) {
        #expect(MQTTTopic.problem(withTopicName: name) != nil)
    }

    @Test func topicLengthLimit() {
        #expect(MQTTTopic.problem(withTopicName: String(repeating: "x", count: 65535)) == nil)
        #expect(MQTTTopic.problem(withTopicName: String(repeating: "x", count: 65536)) != nil)
        #expect(MQTTTopic.problem(withTopicFilter: String(repeating: "x", count: 65535)) == nil)
        #expect(MQTTTopic.problem(withTopicFilter: String(repeating: "x", count: 65536)) != nil)
    }

    @Test(arguments: [
        "#", "+", "a/+/b", "a/#", "+/+", "/", "/#", "+/#", "$SYS/#", "$share/g/a/#", "$share/g/+", "$share/g/$share/x",
        "$share", "$shared/a",
    ])
    func validTopicFilters(filter: String) {
        #expect(MQTTTopic.problem(withTopicFilter: filter) == nil)
    }

    @Test(arguments: [
        "", "a#", "a/#/b", "#/", "a+", "a/b+/c", "++", "##", "$share/g", "$share//a", "$share/g+/a", "$share/g#/a",
        "$share/g/", "$share/", "a\u{0}", "$share/g/a/#/b",
    ])
    func invalidTopicFilters(filter: String) {
        #expect(MQTTTopic.problem(withTopicFilter: filter) != nil)
    }
}
