import Foundation
import Testing

/// A tmpfs of a few megabytes mounted for one test (the tests run as root, as CI does), with
/// a filler file to make it full on demand; unmounted on deinit.
final class SmallFileSystem {
    let path: String
    private var filler: String { path + "/filler" }

    init(at path: String, megabytes: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mount = try Tool.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0755", "tmpfs", path])
        try #require(mount.status == 0, "mounting a tmpfs needs root: \(mount.output)", sourceLocation: sourceLocation)
    }

    deinit { _ = try? Tool.run("/bin/umount", ["-l", path]) }

    /// Writes a filler file until about `leavingKilobytes` are left.
    func fill(leavingKilobytes: Int) throws {
        var stats = statvfs()
        statvfs(path, &stats)
        let free = Int(stats.f_bavail) * Int(stats.f_frsize)
        let size = max(0, free - leavingKilobytes * 1024)
        _ = FileManager.default.createFile(atPath: filler, contents: Data(count: size))
    }

    /// Removes the filler: the file system has room again.
    func freeFiller() throws { try FileManager.default.removeItem(atPath: filler) }
}
