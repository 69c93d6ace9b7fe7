import SIPCodec
import SwitchyardPluginKit

/// `register:` of a sip instance as written: a section or `false` (no registration; `true`
/// registers with the defaults). Apart from ``SIPRegistrationSettings`` because the registrar
/// it leaves out is only known once the identity is read.
struct SIPRegisterSection: SwitchableSection {
    var enabled = true
    var registrar: String?
    var expires = 600
    var onStart = true
    var retry = BackoffSettings<Retry>()

    init() {}

    init(settingsFrom decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        registrar = try container.decodeIfPresent(String.self, forKey: .registrar)
        // Registrars refuse under 10 s (most under 60 s); Expires is a 31-bit delta.
        expires = try container.decode(.expires, default: expires, in: 10...SIPDeltaSeconds.maximum)
        retry = try container.decode(.retry, default: retry)
        onStart = try container.decode(.onStart, default: true)
    }

    /// The registration, nil when off; the registrar defaults to the IMPU's domain.
    func registration(domain: String) -> SIPRegistrationSettings? {
        guard enabled else { return nil }
        return SIPRegistrationSettings(
            registrarURI: registrar ?? "sip:\(domain)", expires: expires, initialRetryDelay: retry.initialDelay,
            maximumRetryDelay: retry.maxDelay, onStart: onStart)
    }

    private enum CodingKeys: CodingKey { case registrar, expires, retry, onStart }

    /// `register.retry:`'s defaults: the backoff after a failed registration.
    enum Retry: BackoffPolicy {
        static let initialDelay: Duration = .seconds(1)
        static let maxDelay: Duration = .seconds(60)
    }
}
