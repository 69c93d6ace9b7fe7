/// A sip instance's registration with a registrar, as ``SIPRegisterSection`` resolves it
/// against the identity (the registrar defaults to the IMPU's domain).
struct SIPRegistrationSettings: Sendable {
    /// The Request-URI of REGISTER (`sip:example.org`).
    var registrarURI: String
    var expires: Int
    var initialRetryDelay: Duration
    var maximumRetryDelay: Duration
    /// Registers when the instance starts (`register.on_start`, default true); otherwise a
    /// `sip.Control {action: register}` does.
    var onStart = true
}
