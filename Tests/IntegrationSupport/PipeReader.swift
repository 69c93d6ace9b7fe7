import Foundation

/// Reads a child's pipe on a thread of its own until the pipe ends or ``stop()`` is called,
/// handing each chunk to `deliver` and, once done, an empty chunk.
///
/// It stands in for `FileHandle.readabilityHandler`, which on Linux installs a Dispatch read
/// source per handle: setting up and tearing down many of them while children come and go
/// corrupts libdispatch's epoll bookkeeping (swift-corelibs-libdispatch #949), and the whole
/// test process crashed so in `_dispatch_event_loop_drain` during a loaded run. A blocking
/// `poll` on the pipe and on a wake-up pipe needs no Dispatch at all.
final class PipeReader: Sendable {
    private let wake: WakeSignal

    /// Starts reading `pipe`'s read end; `deliver` runs on the reader's thread.
    init(_ pipe: Pipe, _ deliver: @escaping @Sendable (Data) -> Void) {
        let wake = WakeSignal()
        self.wake = wake
        // The thread holds the handle, so its descriptor stays open (and is not reused) until
        // the thread is done with it.
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread {
            Self.read(handle, wake: wake, deliver: deliver)
            deliver(Data())
        }
    }

    /// Starts reading `pipe` into `buffer`, which learns of the pipe's end (``OutputBuffer/waitForEnd(timeout:)``).
    convenience init(_ pipe: Pipe, into buffer: OutputBuffer) {
        self.init(pipe) { buffer.take($0) }
    }

    /// Stops reading (what is still in the pipe is left there); the thread ends.
    func stop() { wake.signal() }

    deinit { wake.signal() }

    private static func read(_ handle: FileHandle, wake: WakeSignal, deliver: (Data) -> Void) {
        let descriptor = handle.fileDescriptor
        var watched = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0),
        ]
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let ready = poll(&watched, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if watched[1].revents != 0 { return }
            guard watched[0].revents != 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count > 0 else { return }
            deliver(Data(chunk[..<count]))
        }
    }
}

/// A socket pair whose only job is to wake a reader's `poll`; closed when neither the reader nor its
/// thread holds it.
private final class WakeSignal: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        // Close-on-exec from the start: a child spawned meanwhile must not hold it.
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let made = ends.withUnsafeMutableBufferPointer { socketpair(AF_UNIX, type, 0, $0.baseAddress) }
        precondition(made == 0, "socketpair: errno \(errno)")
        (readEnd, writeEnd) = (ends[0], ends[1])
    }

    func signal() {
        var byte: UInt8 = 1
        _ = Glibc.write(writeEnd, &byte, 1)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}
