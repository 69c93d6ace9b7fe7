import CCycloneDDS
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The Cyclone DDS domains this process joined, created with the plugin's defaults
/// (``defaults``) under the user's `CYCLONEDDS_URI`, and counted: the last participant of a
/// domain deletes it (an explicitly created domain outlives its participants otherwise).
enum DDSDomain {
    /// Cyclone settings the plugin changes, as a configuration fragment that `CYCLONEDDS_URI`
    /// (read after it) overrides:
    /// - `Internal/MultipleReceiveThreads` false: one receive thread serves the unicast and the
    ///   multicast sockets (Cyclone 0.10 starts `recvUC` and `recvMC` beside `recv` otherwise,
    ///   two idle threads per domain for a router's few topics).
    ///
    /// That leaves Cyclone 0.10.2 (Debian's) at five threads per domain, its floor: `gc`,
    /// `dq.builtins`, `dq.user`, `tev` and `recv` start unconditionally with a networked domain
    /// (`rtps_start`), and no setting removes one. Deliberately left at Cyclone's defaults:
    /// - `Internal/SynchronousDelivery*` (threshold 0, bound inf): remote samples are already
    ///   delivered from `recv`, so reader listeners run there and `dq.user` idles; deferring to
    ///   `dq.user` saves no thread, costs a hand-off per sample, and its 256-sample queue does
    ///   not shield `recv` from a listener stalled on a full route.
    /// - `Internal/LivelinessMonitoring` (`threadmon`), `Internal/MonitorPort` (`debmon`), a
    ///   TCP `General/Transport` (`listen`) and a writer latency budget (`sendq`) each add a
    ///   thread; DDS Security adds `fsm` with the first handshake.
    static let defaults =
        "<CycloneDDS><Domain><Internal><MultipleReceiveThreads>false</MultipleReceiveThreads></Internal></Domain></CycloneDDS>"

    /// Per domain id: the handle of the domain this process created (0 when it existed
    /// already, made by someone else), and how many participants use it.
    private static let joined = Mutex<[UInt32: (handle: dds_entity_t, users: Int)]>([:])

    /// Makes sure `domain` exists with the plugin's defaults; pair with ``leave(_:)``.
    static func join(_ domain: UInt32) throws(DDSError) {
        let result: DDSError? = joined.withLock { joined in
            if let entry = joined[domain] {
                joined[domain] = (entry.handle, entry.users + 1)
                return nil
            }
            var configuration = defaults
            if let user = getenv("CYCLONEDDS_URI"), user.pointee != 0 { configuration += "," + String(cString: user) }
            let handle = dds_create_domain(domain, configuration)
            if handle > 0 {
                joined[domain] = (handle, 1)
            } else if handle == DDS_RETCODE_PRECONDITION_NOT_MET {
                joined[domain] = (0, 1)  // created before, outside this registry: leave it be
            } else {
                return DDSError("creating a participant on domain \(domain)", handle, hint: setupFailureHint(domain))
            }
            return nil
        }
        if let result { throw result }
    }

    /// What usually keeps Cyclone from setting a domain up, for the error a user reads: Cyclone
    /// returns a bare "Error", and says why only in its own log.
    static func setupFailureHint(_ domain: UInt32) -> String {
        // Cyclone's two fixed ports: PortBase 7400 + DomainGain 250 × domain, and the one after.
        let port = 7400 + 250 * Int(domain)
        let ports = port + 1 <= Int(UInt16.max) ? " (\(port) and \(port + 1) unless CYCLONEDDS_URI moves them)" : ""
        return "Cyclone DDS could not set the domain up: a network interface that CYCLONEDDS_URI names is missing, "
            + "or another program holds one of the domain's UDP ports\(ports); Cyclone's own log line says which "
            + "(docs/qeo.md, \"A port another program holds\")"
    }

    /// One participant of `domain` is gone; the last one deletes the domain this created.
    static func leave(_ domain: UInt32) {
        let handle: dds_entity_t = joined.withLock { joined in
            guard let entry = joined[domain] else { return 0 }
            guard entry.users <= 1 else {
                joined[domain] = (entry.handle, entry.users - 1)
                return 0
            }
            joined[domain] = nil
            return entry.handle
        }
        if handle > 0 { dds_delete(handle) }
    }
}
