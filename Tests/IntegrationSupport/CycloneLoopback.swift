/// Cyclone DDS as the tests run it (given as `CYCLONEDDS_URI` to routers, Python peers and the
/// tests' own participants): on loopback only, since Cyclone 0.10 needs multicast forced on
/// `lo`, and with a domain gain of 100 instead of 250. The test domains (128–160) then bind their
/// fixed ports (7400 + 100 × domain and the next) at 20,200–23,401, below the kernel's ephemeral
/// range (32,768–60,999), where a UDP socket another test opened once took domain 131's data port
/// ("failed to bind … address in use").
enum CycloneLoopback {
    static let configuration =
        #"<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo" multicast="true"/></Interfaces></General><Discovery><Ports><DomainGain>100</DomainGain></Ports></Discovery></Domain></CycloneDDS>"#
}
