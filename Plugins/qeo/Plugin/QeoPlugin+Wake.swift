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

extension QeoPlugin {
    /// The wake watcher and its feed, when the instance has `wake:` (which needs `enroll:`).
    static func makeWake(_ configuration: QeoConfiguration) throws -> WakeWatcher? {
        guard let settings = configuration.wake, let realm = configuration.enroll?.realm else { return nil }
        let path = settings.store ?? URL(fileURLWithPath: realm).appendingPathComponent("wake.sqlite").path
        do {
            let feed = try WakeFeed(
                path: path, maximumChanges: settings.maximumChanges, maximumAge: Double(settings.maximumAge.components.seconds))
            return WakeWatcher(feed: feed, topics: settings.topics, realm: realm)
        } catch {
            throw PluginError("/wake/store: \(error)")
        }
    }

    /// Records a change of a watched state instance (`value` nil: removed) and emits a
    /// `qeo.Wake` for each user it concerns.
    func wakeUp(_ item: QDMStruct, key sample: JSONValue, value: JSONValue?) {
        guard let wake, wake.topics.contains(item.name) else { return }
        var key: [String: JSONValue] = [:]
        for member in item.keys { key[member.name] = sample[member.name] }
        let recorded: (users: [UInt64], cursor: Int64)?
        do {
            recorded = try wake.changed(topic: item.name, key: JSONValue.object(key).serialized(), value: value?.serializedBytes())
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
                type: Self.wakeType, subject: QeoIdentifier.hex(user), contentType: "application/json", body: body.serializedBytes())
            envelope.headers.append(name: "qeo.type", value: item.name)
            if context.emit(envelope, on: Self.wakesPort) == .ok { context.metric(.counter, "wakes_total", 1) }
        }
    }

    /// `GET /wake/changes?since=CURSOR` on the enrollment endpoint: the authenticated member's
    /// user's changes after its cursor, a page at a time.
    static func feedRoute(_ wake: WakeWatcher) -> EnrollmentServer.MemberRoute {
        EnrollmentServer.MemberRoute(path: "/wake/changes") { member, request in
            let since = request.uri.queryParameters.get("since").flatMap { Int64($0) } ?? 0
            let page = try? await NIOThreadPool.singleton.runIfActive {
                try wake.feed.page(user: member.user, after: max(since, 0), limit: WakeSettings.pageSize)
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
