import Foundation
import SwitchyardConfig

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `run --watch`: waits on inotify for changes in the folder of the route files and raises
/// SIGHUP in this process when a route file was added, removed or modified, so a change takes
/// the same path as a manual reload. The thread blocks in `read` (no polling); an editor's
/// burst of events (write, rename, chmod) becomes one reload, because the files' fingerprint is
/// compared only after the burst has been read.
struct RouteFileWatcher {
    let path: String

    /// Starts the watcher thread; an error (inotify unavailable, folder unreadable) is returned
    /// for the caller to log, and then the router runs without watching.
    func start() throws(WatchError) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { throw WatchError(reason: "inotify_init1: \(String(cString: strerror(errno)))") }
        let folder = Self.folder(of: path)
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
        guard inotify_add_watch(descriptor, folder, mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw WatchError(reason: "cannot watch '\(folder)': \(reason)")
        }
        let path = self.path
        let thread = Thread {
            var last = Self.fingerprint(path)
            // Room for a burst of events; each event is a header plus a name of up to NAME_MAX.
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return }
                Self.drainPending(descriptor, into: &buffer)
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

    /// Reads whatever further events are already queued, without waiting for more.
    private static func drainPending(_ descriptor: Int32, into buffer: inout [UInt8]) {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while poll(&ready, 1, 0) > 0, ready.revents & Int16(POLLIN) != 0 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
        }
    }

    /// The folder to watch: the route folder itself, or the folder of a single route file
    /// (editors replace a file by renaming a new one over it, which a watch on the file misses).
    private static func folder(of path: String) -> String {
        var status = stat()
        if stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR { return path }
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
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

/// Why `--watch` could not start.
struct WatchError: Error, CustomStringConvertible {
    var reason: String
    var description: String { "--watch: \(reason)" }
}
