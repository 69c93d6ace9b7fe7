/// Why a packet could not be encoded or decoded.
///
/// Decoding errors are fatal for the connection: MQTT gives the receiver of a malformed packet or a
/// protocol violation no way to recover but to close the network connection (MQTT 5 first sends a
/// DISCONNECT with reason code 0x81 Malformed Packet, 0x82 Protocol Error or 0x95 Packet too large).
public struct MQTTCodecError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of problem, matching the MQTT 5 reason codes a receiver reports.
    public enum Kind: Sendable, Equatable {
        /// The bytes cannot be parsed as the packet they claim to be (MQTT 5 reason code 0x81).
        case malformed
        /// The packet parses but breaks a rule of the protocol (MQTT 5 reason code 0x82).
        case protocolViolation
        /// The packet is larger than the agreed maximum, or than the protocol can express (0x95).
        case packetTooLarge
    }

    /// The class of problem.
    public var kind: Kind
    /// The packet type's name, such as `"PUBLISH"`, or `"unknown(0xNN)"` with the first byte of a
    /// packet whose type is reserved.
    public var packet: String
    /// What is wrong, in words, such as `"topic is not valid UTF-8"`.
    public var reason: String

    /// Creates an error of `kind` about `packet`.
    public init(kind: Kind, packet: String, reason: String) {
        self.kind = kind
        self.packet = packet
        self.reason = reason
    }

    /// A sentence for logs, such as `"malformed PUBLISH packet: topic is not valid UTF-8"`.
    public var description: String {
        switch kind {
        case .malformed: "malformed \(packet) packet: \(reason)"
        case .protocolViolation: "protocol violation in \(packet) packet: \(reason)"
        case .packetTooLarge: "\(packet) packet too large: \(reason)"
        }
    }
}

extension MQTTCodecError.Kind {
    /// The MQTT 5 reason code a DISCONNECT reports for this problem.
    public var reasonCode: UInt8 {
        switch self {
        case .malformed: 0x81
        case .protocolViolation: 0x82
        case .packetTooLarge: 0x95
        }
    }
}

extension MQTTCodecError {
    /// A malformed-packet error whose packet name is filled in by the top-level entry point.
    static func malformed(_ reason: String) -> MQTTCodecError {
        MQTTCodecError(kind: .malformed, packet: "", reason: reason)
    }

    /// A protocol-violation error whose packet name is filled in by the top-level entry point.
    static func protocolViolation(_ reason: String) -> MQTTCodecError {
        MQTTCodecError(kind: .protocolViolation, packet: "", reason: reason)
    }

    /// A too-large error whose packet name is filled in by the top-level entry point.
    static func packetTooLarge(_ reason: String) -> MQTTCodecError {
        MQTTCodecError(kind: .packetTooLarge, packet: "", reason: reason)
    }

    /// This error, naming `packet` unless it already names one.
    func naming(_ packet: String) -> MQTTCodecError {
        var copy = self
        if copy.packet.isEmpty { copy.packet = packet }
        return copy
    }
}
