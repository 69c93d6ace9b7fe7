import Foundation
import QeoRealm
import Testing

@Suite("Qeo policy files")
struct QeoPolicyTests {
    static let policy = """
        # as Qeo wrote them
        [meta]
        version=1.0
        seqnr=3
        [uid:2da]
        *=rw
        org::qeo::system::*=r
        [uid:2d9]
        * = r<uid:2d9;uid:2da> w<uid:2d9>
        org.qeo.sample.simplechat.ChatMessage=r<>w<uid:2d9>
        [rid:27555f6f6ccbc21d]
        org::qeo::system::Policy=rw
        """

    @Test func readsSectionsRulesAndFineGrainedRights() throws {
        let policy = try QeoPolicy(parsing: Self.policy, file: "policy")
        #expect(policy.sequenceNumber == 3)
        #expect(policy.sections.map(\.subject) == [.user(0x2da), .user(0x2d9), .realm(0x2755_5f6f_6ccb_c21d)])
        let chat = try #require(policy.sections[1].rules.last)
        #expect(chat.topic == "org.qeo.sample.simplechat.ChatMessage")
        #expect(!chat.read && chat.write)
        #expect(chat.line == 10)
        #expect(policy.sections[1].rules[0].read && policy.sections[1].rules[0].write)
    }

    @Test func windowsLineEndsAreLineEnds() throws {
        let policy = try QeoPolicy(parsing: Self.policy.replacingOccurrences(of: "\n", with: "\r\n"), file: "policy")
        #expect(policy == (try QeoPolicy(parsing: Self.policy, file: "policy")))
    }

    @Test func aDevicesRulesAreItsUsersAndItsRealmsMostSpecificFirst() throws {
        let policy = try QeoPolicy(parsing: Self.policy, file: "policy")
        let rules = policy.rules(realm: 0x2755_5f6f_6ccb_c21d, user: 0x2da)
        #expect(rules.map(\.topic) == ["org.qeo.system.Policy", "org.qeo.system.*", "*"])
        #expect(rules.map(\.ddsTopicExpression) == ["org/qeo/system/Policy", "org/qeo/system/*", "*"])
        #expect(rules.map(\.write) == [true, false, true])
        // Another realm's section does not apply.
        #expect(policy.rules(realm: 1, user: 0x2da).map(\.topic) == ["org.qeo.system.*", "*"])
        #expect(policy.rules(realm: 1, user: 0x99).isEmpty)
    }

    @Test(arguments: [
        ("[meta]\nversion=1.0\nseqnr=1\n[uid:1]\nTopic=x\n", "policy:5: rights 'x': expected r, w or rw"),
        ("[meta]\nversion=1.0\nseqnr=1\n[did:1]\n", "policy:4: section [did:1]: expected [meta], [rid:HEX] or [uid:HEX]"),
        ("[meta]\nversion=2.0\n", "policy:2: version 2.0: only 1.0 is known"),
        ("[uid:1]\n*=rw\n", "policy: the [meta] section needs version=1.0 and seqnr=N"),
        ("*=rw\n", "policy:1: '*=rw' comes before any [section]"),
        ("[meta]\nversion=1.0\nseqnr=1\n[uid:1]\norg.*.x=r\n", "policy:5: 'org.*.x' is not a topic name or a prefix ending in *"),
        ("[meta]\nversion=1.0\nseqnr=1\n[uid:1]\na=r\na=w\n", "policy:6: a is already given a rule on line 5"),
        ("[meta]\nversion=1.0\nseqnr=1\n[uid:1]\na=r<did:1>\n", "policy:5: rights 'r<did:1>': 'did:1' is not uid:HEX"),
        ("[meta]\nversion=1.0\nseqnr=1\n[uid:1]\n=rw\n", "policy:5: '' is not a topic name or a prefix ending in *"),
        ("[meta]\nversion=1.0\nseqnr=1\n[meta]\nseqnr=2\n", "policy:4: a second [meta] section"),
    ])
    func badLinesAreNamed(text: String, message: String) {
        #expect {
            try QeoPolicy(parsing: text, file: "policy")
        } throws: { error in
            "\(error)" == message
        }
    }
}
