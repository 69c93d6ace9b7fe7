import Foundation

/// Tells systemd how the router is doing when it runs as a `Type=notify` service: `READY=1`
/// once it routes, `RELOADING=1` … `READY=1` around a reload, `STOPPING=1` when the drain
/// begins (sd_notify(3)'s protocol: one datagram to the socket `NOTIFY_SOCKET` names). Without
/// `NOTIFY_SOCKET`, as outside systemd, nothing is sent.
enum SystemdNotification {
    /// Sends `fields` (`READY=1`, `STATUS=…`), one per line; false when there is no socket or
    /// the datagram could not be sent.
    @discardableResult
    static func send(_ fields: String...) -> Bool {
        guard let path = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !path.isEmpty else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // `@name` is an abstract socket: its address starts with a NUL byte.
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let message = Array(fields.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length) }
            }
        }
        return sent == message.count
    }

    /// `MONOTONIC_USEC=…`, which systemd wants beside `RELOADING=1`: CLOCK_MONOTONIC now, in µs.
    static var monotonicNow: String {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return "MONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)"
    }
}
