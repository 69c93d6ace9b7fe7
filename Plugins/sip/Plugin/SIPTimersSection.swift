import SIPCodec
import SwitchyardPluginKit

/// `timers:` of a sip instance as written: RFC 3261's T1, T2 and T4, each defaulting to the
/// RFC's value (the codec's ``SIPTimers`` is not itself a configuration value).
struct SIPTimersSection: Decodable {
    var timers: SIPTimers

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let rfc3261 = SIPTimers()
        timers = SIPTimers(
            t1: try container.decode(.t1, default: rfc3261.t1), t2: try container.decode(.t2, default: rfc3261.t2),
            t4: try container.decode(.t4, default: rfc3261.t4))
    }

    private enum CodingKeys: CodingKey { case t1, t2, t4 }
}
