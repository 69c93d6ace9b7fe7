import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import QeoEnrollment
import QeoQDM
import QeoRealm
import QeoWake
import SwitchyardCore
import SwitchyardPluginHTTP
import SwitchyardPluginKit

/// An instance's part in waking members' apps (`wake:`): it owns the watcher of the watched
/// state topics and its feed, turns each watched change into `qeo.Wake` envelopes, and serves
/// the feed on the enrollment endpoint. Separate from ``QeoPlugin`` because none of it touches
/// DDS: the plugin only tells it what its readers saw, and an instance without `wake:` has none.
struct QeoWakes: Sendable {
    /// Who a watched state change wakes, and their feeds.
    let watcher: WakeWatcher
    private let context: PluginContext

    /// The watcher and its feed, or nil when the instance has no `wake:` (which needs `enroll:`).
    init?(configuration: QeoConfiguration, context: PluginContext) throws {
        guard let settings = configuration.wake, let realm = configuration.enroll?.realm else { return nil }
        let path = settings.store ?? URL(fileURLWithPath: realm).appendingPathComponent("wake.sqlite").path
        do {
            let feed = try WakeFeed(
                path: path, maximumChanges: settings.maximumChanges, maximumAge: Double(settings.maximumAge.components.seconds))
            watcher = WakeWatcher(feed: feed, topics: settings.topics, realm: realm)
        } catch {
            throw PluginError("/wake/store: \(error)")
        }
        self.context = context
    }

    /// Records a change of a watched state instance (`value` nil: removed) and emits a
    /// `qeo.Wake` for each user it concerns.
    func changed(_ item: QDMStruct, key sample: JSONValue, value: JSONValue?) {
        guard watcher.topics.contains(item.name) else { return }
        var key: [String: JSONValue] = [:]
        for member in item.keys { key[member.name] = sample[member.name] }
        let recorded: (users: [UInt64], cursor: Int64)?
        do {
            recorded = try watcher.changed(topic: item.name, key: JSONValue.object(key).serialized(), value: value?.serializedBytes())
        } catch {
            context.metric(.counter, "wake_failures_total", 1)
            context.log(.error, "wake: recording a change of \(item.name): \(error)")
            return
        }
        guard let recorded else { return }
        for user in recorded.users {
            let body: JSONValue = [
                "user": .string(QeoIdentifier.hex(user)), "cursor": .int(Int(recorded.cursor)), "topic": .string(item.name),
                "removed": .bool(value == nil),
            ]
            var envelope = Envelope(
                type: QeoPlugin.wakeType, subject: QeoIdentifier.hex(user), contentType: "application/json", body: body.serializedBytes())
            envelope.headers.append(name: "qeo.type", value: item.name)
            if context.emit(envelope, on: QeoPlugin.wakesPort) == .ok { context.metric(.counter, "wakes_total", 1) }
        }
    }

    /// `GET /wake/changes?since=CURSOR` on the enrollment endpoint: the authenticated member's
    /// user's changes after its cursor, a page at a time.
    var feedRoute: EnrollmentServer.MemberRoute {
        let watcher = watcher
        return EnrollmentServer.MemberRoute(path: "/wake/changes") { member, request in
            let since = request.uri.queryParameters.get("since").flatMap { Int64($0) } ?? 0
            let page = try? await NIOThreadPool.singleton.runIfActive {
                try watcher.feed.page(user: member.user, after: max(since, 0), limit: WakeSettings.pageSize)
            }
            guard let page else {
                return .json(["error": "internal"], status: .internalServerError)
            }
            let changes: [JSONValue] = page.changes.map { change in
                [
                    "topic": .string(change.topic), "key": (try? JSONValue(parsing: Array(change.key.utf8))) ?? .null,
                    "value": change.value.flatMap { try? JSONValue(parsing: $0) } ?? .null, "removed": .bool(change.value == nil),
                    "cursor": .int(Int(change.cursor)),
                ]
            }
            let body: JSONValue = [
                "user": .string(QeoIdentifier.hex(member.user)), "cursor": .int(Int(page.cursor)), "more": .bool(page.more),
                "reset": .bool(page.reset), "changes": .array(changes),
            ]
            return .json(body)
        }
    }
}
