import Foundation
import Synchronization

/// A network namespace of one test, joined to the host by veth pairs: each link has a /30 of
/// `10.R.N.0` with the host end `.1` and the namespace end `.2`, addresses the test assigns in
/// its own namespaces (no traffic leaves the machine). A link is cut with `ip link set … down`
/// on the host end (this kernel has no `netem` qdisc) and restored with `up`. The namespace, and
/// with it every veth pair, is removed on deinit; namespaces left by a test runner that was
/// killed (its pid is in the name) are removed by the next one that starts.
final class NetworkNamespace {
    /// One veth pair between the host and the namespace.
    struct Link {
        /// The host end's device.
        let hostDevice: String
        /// The host end's address: where a peer on the host listens for the namespace.
        let hostAddress: String
        /// The namespace end's address.
        let innerAddress: String
    }

    static let ip = "/usr/sbin/ip"
    private static let prefix = "sy-t"
    /// Numbers the namespaces of this test process.
    private static let counter = Mutex(0)

    let name: String
    private(set) var links: [Link] = []

    /// Whether this machine lets the tests create namespaces (root, iproute2, a kernel with
    /// network namespaces); why not, otherwise.
    static let unavailableBecause: String? = {
        guard FileManager.default.isExecutableFile(atPath: ip) else { return "\(ip) is missing (apt-get install iproute2)" }
        guard geteuid() == 0 else { return "network namespaces need root" }
        let probe = "\(prefix)-probe-\(getpid())"
        guard let result = try? Tool.run(ip, ["netns", "add", probe], timeout: .seconds(10)), result.status == 0 else {
            return "ip netns add failed: the kernel or the container does not allow network namespaces"
        }
        _ = try? Tool.run(ip, ["netns", "del", probe], timeout: .seconds(10))
        return nil
    }()

    /// A namespace with `links` veth pairs to the host, their ends up and addressed, and its
    /// own loopback up.
    init(links count: Int) throws {
        Self.removeStale()
        let number = Self.counter.withLock { count in
            count += 1
            return count
        }
        let pid = getpid()
        name = "\(Self.prefix)-\(pid)-\(number)"
        try Self.run(["netns", "add", name])
        do {
            try Self.run(["netns", "exec", name, Self.ip, "link", "set", "lo", "up"])
            for index in 0..<count {
                // 10.R.N.0/30: R from the pid and the link, N from the namespace's number, so
                // the namespaces of one run (and of runs side by side, almost always) differ.
                let second = 100 + Int(pid % 50) * 3 + index
                let third = number % 250
                let host = "sy\(pid % 100_000)n\(number)h\(index)"
                let inner = "sy\(pid % 100_000)n\(number)i\(index)"
                let link = Link(hostDevice: host, hostAddress: "10.\(second).\(third).1", innerAddress: "10.\(second).\(third).2")
                try Self.run(["link", "add", host, "type", "veth", "peer", "name", inner])
                try Self.run(["link", "set", inner, "netns", name])
                try Self.run(["addr", "add", "\(link.hostAddress)/30", "dev", host])
                try Self.run(["link", "set", host, "up"])
                try Self.run(["netns", "exec", name, Self.ip, "addr", "add", "\(link.innerAddress)/30", "dev", inner])
                try Self.run(["netns", "exec", name, Self.ip, "link", "set", inner, "up"])
                links.append(link)
            }
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// Takes link `index` down (the partition begins).
    func cut(_ index: Int) throws { try Self.run(["link", "set", links[index].hostDevice, "down"]) }

    /// Brings link `index` up again (the partition heals).
    func restore(_ index: Int) throws { try Self.run(["link", "set", links[index].hostDevice, "up"]) }

    /// `command` run inside the namespace: the executable and arguments to start a process with.
    func wrap(_ command: [String]) -> (executable: URL, arguments: [String]) {
        (URL(fileURLWithPath: Self.ip), ["netns", "exec", name] + command)
    }

    private func remove() {
        // Deleting the namespace deletes the veth ends inside it, and so their host peers.
        _ = try? Tool.run(Self.ip, ["netns", "del", name], timeout: .seconds(10))
        for link in links { _ = try? Tool.run(Self.ip, ["link", "del", link.hostDevice], timeout: .seconds(10)) }
    }

    /// Removes the namespaces of test runners that are gone.
    private static func removeStale() {
        guard let listed = try? Tool.run(ip, ["netns", "list"], timeout: .seconds(10)) else { return }
        for line in listed.output.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            let parts = name.split(separator: "-")
            guard name.hasPrefix(prefix + "-"), parts.count == 4, let pid = Int32(parts[2]), pid != getpid(), kill(pid, 0) != 0 else {
                continue
            }
            _ = try? Tool.run(ip, ["netns", "del", name], timeout: .seconds(10))
        }
    }

    private static func run(_ arguments: [String]) throws {
        let result = try Tool.run(ip, arguments, timeout: .seconds(10))
        guard result.status == 0 else { throw SandboxError("ip \(arguments.joined(separator: " ")) failed: \(result.output)") }
    }
}
