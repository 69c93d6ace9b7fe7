/// Where a property list sits: each packet type, and the will, allows its own properties.
enum MQTTPropertyContext: Sendable {
    case connect, will, connack, publish, ack, subscribe, suback, unsubscribe, unsuback, disconnect, auth

    /// How error messages name the property list.
    var description: String {
        self == .will ? "will properties" : "this packet"
    }
}
