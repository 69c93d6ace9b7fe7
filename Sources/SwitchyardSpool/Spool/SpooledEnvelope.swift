/// An envelope read back from the spool.
public struct SpooledEnvelope: Sendable {
    /// Its sequence number: the order of the route.
    public var sequence: Int64
    /// The sinks still to deliver to.
    public var pending: [String]
    /// Failed attempts so far.
    public var attempts: Int
    /// The envelope in binary form.
    public var envelope: [UInt8]
}
