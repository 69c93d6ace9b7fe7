import Foundation
import PluginTestSupport
import SwitchyardCore
import SwitchyardPluginKit
import Testing

/// An emit that finds its route full waits for the router's resume, not a timer.
struct SourceRoomTests {
    /// Emits on a thread of its own, as a plugin's reader thread would; the result once it
    /// returns.
    private final class Emitting: Sendable {
        private let result = Locked<EmitResult?>(nil)

        init(_ room: SourceRoom, through host: RecordingHost, until deadline: ContinuousClock.Instant? = nil) {
            Thread { [result] in
                let answer = room.emit(Envelope(type: "t.A"), on: "out", through: host.context, until: deadline)
                result.withLock { $0 = answer }
            }.start()
        }

        var answer: EmitResult? { result.withLock { $0 } }
    }

    /// Waits up to 10 s for `condition`, suspending between looks.
    private func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    /// An emit through `room` that found its route full and waits: the host, and the emit.
    private func waitingForRoom(in room: SourceRoom) async -> (RecordingHost, Emitting) {
        let host = RecordingHost()
        host.emitAnswer = .full
        let emitting = Emitting(room, through: host)
        #expect(await eventually { host.emitted.count == 1 })
        return (host, emitting)
    }

    @Test func aFullRouteIsTriedAgainOnResume() async {
        let room = SourceRoom()
        let (host, emitting) = await waitingForRoom(in: room)
        host.emitAnswer = .ok
        // No deadline: only the resume ends the wait.
        room.resumed()
        #expect(await eventually { emitting.answer == .ok })
        #expect(host.emitted.count == 2)
    }

    @Test func aStopEndsTheWait() async {
        let room = SourceRoom()
        let (_, emitting) = await waitingForRoom(in: room)
        room.stop()
        #expect(await eventually { emitting.answer == .stopped })
        #expect(room.isStopped)
    }

    @Test func aDeadlineEndsTheWaitWithFull() async {
        let host = RecordingHost()
        host.emitAnswer = .full
        let emitting = Emitting(SourceRoom(), through: host, until: .now)
        #expect(await eventually { emitting.answer == .full })
        #expect(host.emitted.count == 1)
    }
}
