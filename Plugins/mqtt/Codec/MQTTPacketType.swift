/// The control packet type: the high nibble of a packet's first byte.
enum MQTTPacketType: UInt8, Sendable {
    case connect = 1
    case connack = 2
    case publish = 3
    case puback = 4
    case pubrec = 5
    case pubrel = 6
    case pubcomp = 7
    case subscribe = 8
    case suback = 9
    case unsubscribe = 10
    case unsuback = 11
    case pingreq = 12
    case pingresp = 13
    case disconnect = 14
    case auth = 15

    /// The name the specification gives the type.
    var name: String {
        switch self {
        case .connect: "CONNECT"
        case .connack: "CONNACK"
        case .publish: "PUBLISH"
        case .puback: "PUBACK"
        case .pubrec: "PUBREC"
        case .pubrel: "PUBREL"
        case .pubcomp: "PUBCOMP"
        case .subscribe: "SUBSCRIBE"
        case .suback: "SUBACK"
        case .unsubscribe: "UNSUBSCRIBE"
        case .unsuback: "UNSUBACK"
        case .pingreq: "PINGREQ"
        case .pingresp: "PINGRESP"
        case .disconnect: "DISCONNECT"
        case .auth: "AUTH"
        }
    }

    /// The fixed-header flags (low nibble) every packet of this type carries; PUBLISH uses them for
    /// DUP, QoS and RETAIN instead.
    var fixedFlags: UInt8 {
        switch self {
        case .pubrel, .subscribe, .unsubscribe: 0b0010
        default: 0
        }
    }
}
