import Foundation
import Logging

/// The process's open-file limit. A router holds a descriptor per connection, file and peer;
/// the soft limit a shell hands down (often 1024) is a few hundred slow clients away from
/// refusing everything, so `run` raises it to the hard limit at start and says so.
enum FileDescriptorLimit {
    /// Raises the soft limit to the hard one; logs the figures (a warning when it cannot).
    static func raise(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let soft = limit.rlim_cur
        guard soft < limit.rlim_max else {
            logger.info("open file limit", metadata: ["limit": .stringConvertible(soft)])
            return
        }
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            logger.info(
                "open file limit raised to the hard limit",
                metadata: ["from": .stringConvertible(soft), "to": .stringConvertible(limit.rlim_max)])
        } else {
            logger.warning(
                "open file limit could not be raised: \(String(cString: strerror(errno)))", metadata: ["limit": .stringConvertible(soft)])
        }
    }
}
