import Dispatch
import QeoEnrollment
import SwitchyardPluginKit

extension QeoPlugin {
    /// Starts the realm's enrollment endpoint when the instance has `enroll:`.
    func startEnrollment() throws {
        _ = try enrollment?.start()
    }

    /// Stops the endpoint, waiting (at most 15 s) for the requests it is answering.
    func stopEnrollment() {
        guard let enrollment else { return }
        let done = DispatchSemaphore(value: 0)
        Task {
            await enrollment.stop()
            done.signal()
        }
        if done.wait(timeout: .now() + 15) == .timedOut {
            context.log(.warning, "stopping the enrollment endpoint took longer than 15 s; left behind")
        }
    }
}
