import SwitchyardPluginKit

/// `history:` of a sip instance as written: a section or `true` (keep a history with the
/// defaults) / `false`; it yields the ``SIPHistorySettings`` the history book keeps to.
struct SIPHistorySection: SwitchableSection {
    var enabled = true
    var keep = 1000
    var maxAge: Duration = .seconds(30 * 86400)
    var maxBody = 4096

    init() {}

    init(settingsFrom decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Clearing or pruning writes one store commit per entry: bounded accordingly.
        keep = try container.decode(.keep, default: keep, in: 1...10_000)
        maxAge = try container.decode(.maxAge, default: maxAge, atLeast: .seconds(1))
        // A body is stored as JSON text (base64 when binary) in one store value.
        maxBody = try container.decode(.maxBody, default: maxBody, in: 0...65536)
    }

    /// The settings, nil when off.
    var settings: SIPHistorySettings? {
        enabled ? SIPHistorySettings(keep: keep, maximumAge: maxAge, maximumBody: maxBody) : nil
    }

    private enum CodingKeys: CodingKey { case keep, maxAge, maxBody }
}
