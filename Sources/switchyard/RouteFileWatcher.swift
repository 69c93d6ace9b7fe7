import Foundation
import SwitchyardConfig

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `run --watch`: checks the route files once a second and raises SIGHUP in this process when
/// one was added, removed or modified, so a change takes the same path as a manual reload.
struct RouteFileWatcher {
    let path: String

    func start() {
        let path = self.path
        let thread = Thread {
            var last = Self.fingerprint(path)
            while true {
                Thread.sleep(forTimeInterval: 1)
                let now = Self.fingerprint(path)
                if now != last {
                    last = now
                    kill(getpid(), SIGHUP)
                }
            }
        }
        thread.name = "route watcher"
        thread.start()
    }

    /// Name, size and modification time of every route file.
    private static func fingerprint(_ path: String) -> [String] {
        let files = (try? ConfigLoader.routeFiles(at: path)) ?? []
        return files.map { file in
            var status = stat()
            guard stat(file, &status) == 0 else { return file + ":missing" }
            return "\(file):\(status.st_size):\(status.st_mtim.tv_sec).\(status.st_mtim.tv_nsec)"
        }
    }
}
