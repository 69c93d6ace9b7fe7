public import Foundation

/// What an enrolled (or renewing) device receives: everything a device directory holds except
/// its private key, which never left the device.
public struct Enrollment: Sendable {
    /// The device's ids and its realm's domain (`device.json`).
    public var identity: DeviceCredentials.Identity
    /// The device's certificate (PEM), issued by the realm CA.
    public var certificate: String
    /// The realm CA's certificate (PEM).
    public var authority: String
    /// The signed governance document.
    public var governance: String
    /// The signed permissions, with the device's one grant.
    public var permissions: String
    /// When the permissions expire; renew before.
    public var leaseUntil: Date
    /// The realm's revocation list, once a member was revoked.
    public var revocationList: String?
}
