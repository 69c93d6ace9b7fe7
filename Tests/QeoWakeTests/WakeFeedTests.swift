import Foundation
import QeoRealm
import Testing

@testable import QeoEnrollment
@testable import QeoWake

@Suite("Wake feed: coalesced, bounded, kept across restarts")
struct WakeFeedTests {
    /// A feed file in a fresh folder, removed after the test.
    final class Scratch {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("wake-\(UUID().uuidString)").path
        var file: String { folder + "/wake.sqlite" }
        deinit { try? FileManager.default.removeItem(atPath: folder) }
    }

    let topic = "org.qeo.sample.simplechat.ChatParticipant"

    @Test func changesOfOneKeyCoalesceToTheLatestAndRemovalsCount() throws {
        let scratch = Scratch()
        let feed = try WakeFeed(path: scratch.file, maximumChanges: 100, maximumAge: 3600)
        let first = try #require(
            try feed.record(users: [1, 2], topic: topic, key: #"{"name":"bob"}"#, value: Array(#"{"state":"BUSY"}"#.utf8))
        ).cursor
        try feed.record(users: [1], topic: topic, key: #"{"name":"bob"}"#, value: Array(#"{"state":"IDLE"}"#.utf8))
        let last = try #require(try feed.record(users: [1], topic: topic, key: #"{"name":"eve"}"#, value: nil)).cursor
        // The same value again (a state seen anew after a restart) changes nothing, wakes nobody.
        #expect(try feed.record(users: [1], topic: topic, key: #"{"name":"bob"}"#, value: Array(#"{"state":"IDLE"}"#.utf8)) == nil)
        #expect(
            try feed.record(users: [1, 2], topic: topic, key: #"{"name":"bob"}"#, value: Array(#"{"state":"IDLE"}"#.utf8))?.users == [2])
        let page = try feed.page(user: 1, after: 0, limit: 10)
        #expect(page.changes.map(\.key) == [#"{"name":"bob"}"#, #"{"name":"eve"}"#])
        #expect(page.changes.first?.value == Array(#"{"state":"IDLE"}"#.utf8))
        #expect(page.changes.last?.value == nil)
        #expect(page.cursor == last && !page.more && !page.reset)
        // User 2 saw only the first change; after the last cursor nothing is left.
        #expect(try feed.page(user: 2, after: 0, limit: 10).changes.map(\.key) == [#"{"name":"bob"}"#])
        #expect(first > 0)
        #expect(try feed.page(user: 1, after: last, limit: 10).changes.isEmpty)
        #expect(try feed.page(user: 1, after: 0, limit: 1).more)
        let mode = try FileManager.default.attributesOfItem(atPath: scratch.file)[.posixPermissions] as? Int
        #expect(mode.map { $0 & 0o077 } == 0)
    }

    @Test func boundsDropTheOldestAndSayResetToACursorThatMissedThem() throws {
        let scratch = Scratch()
        let feed = try WakeFeed(path: scratch.file, maximumChanges: 3, maximumAge: 60)
        let start = Date()
        for index in 0..<5 {
            try feed.record(users: [1], topic: topic, key: #"{"name":"p\#(index)"}"#, value: [], now: start)
        }
        let page = try feed.page(user: 1, after: 0, limit: 10, now: start)
        #expect(page.changes.map(\.key) == [#"{"name":"p2"}"#, #"{"name":"p3"}"#, #"{"name":"p4"}"#])
        #expect(page.reset, "changes after cursor 0 were dropped")
        #expect(try !feed.page(user: 1, after: 2, limit: 10, now: start).reset)
        // Past the age bound everything goes, and a cursor from before says reset.
        let later = try feed.page(user: 1, after: 4, limit: 10, now: start.addingTimeInterval(61))
        #expect(later.changes.isEmpty && later.reset)
        // Starting over from the cursor given back, the feed is in step again.
        #expect(try !feed.page(user: 1, after: later.cursor, limit: 10, now: start.addingTimeInterval(61)).reset)
        // A cursor from another feed (ahead of this one) is told to start over too.
        #expect(try feed.page(user: 1, after: 99, limit: 10, now: start).reset)
    }

    @Test func theFeedAndItsCursorsSurviveAReopen() throws {
        let scratch = Scratch()
        var cursor: Int64 = 0
        do {
            let feed = try WakeFeed(path: scratch.file, maximumChanges: 10, maximumAge: 3600)
            cursor = try #require(try feed.record(users: [1], topic: topic, key: "{}", value: Array("{}".utf8))).cursor
        }
        let reopened = try WakeFeed(path: scratch.file, maximumChanges: 10, maximumAge: 3600)
        #expect(try reopened.page(user: 1, after: 0, limit: 10).changes.map(\.cursor) == [cursor])
        #expect(try reopened.record(users: [1], topic: topic, key: #"{"k":1}"#, value: nil)?.cursor == cursor + 1)
    }

    @Test func anAddressThatKeepsFailingWaitsForItsWindow() {
        let throttle = EnrollmentThrottle(failures: 2, window: .seconds(60), capacity: 2)
        let now = ContinuousClock.now
        #expect(throttle.wait(for: "a", now: now) == nil)
        throttle.fail("a", now: now)
        #expect(throttle.wait(for: "a", now: now) == nil)
        throttle.fail("a", now: now + .seconds(1))
        #expect(throttle.wait(for: "a", now: now + .seconds(2)) == .seconds(58))
        #expect(throttle.wait(for: "b", now: now + .seconds(2)) == nil)
        #expect(throttle.wait(for: "a", now: now + .seconds(61)) == nil)
        // A full table forgets the address whose window started first.
        throttle.fail("b", now: now + .seconds(62))
        throttle.fail("b", now: now + .seconds(62))
        throttle.fail("c", now: now + .seconds(63))
        throttle.fail("d", now: now + .seconds(64))
        #expect(throttle.wait(for: "b", now: now + .seconds(65)) == nil)
    }

    @Test func codesAreTypedLooselyButBoundedAndFromTheirAlphabet() {
        #expect(EnrollmentCode.normalised("k7qm 2xwd-9hcr") == "K7QM2XWD9HCR")
        #expect(EnrollmentCode.normalised("K7QM-2XWD-9HC0") == nil)
        #expect(EnrollmentCode.normalised(String(repeating: "A", count: 100)) == nil)
    }
}
