import MQTTCodec
import NIOCore
import Testing

/// The wire form of `packet`.
func encoded(_ packet: MQTTPacket, _ version: MQTTVersion) throws -> [UInt8] {
    var buffer = ByteBuffer()
    try MQTTCodec.encode(packet, version: version, into: &buffer)
    return Array(buffer.readableBytesView)
}

/// Decodes `bytes`, expecting exactly one packet that uses every byte.
func decodedWhole(_ bytes: [UInt8], _ version: MQTTVersion, sourceLocation: SourceLocation = #_sourceLocation) throws
    -> MQTTPacket?
{
    var buffer = ByteBuffer(bytes: bytes)
    let packet = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: .max)
    #expect(buffer.readableBytes == 0, "bytes left over", sourceLocation: sourceLocation)
    return packet
}

/// Expects decoding `bytes` to throw an error of `kind` about `packet`, leaving the buffer untouched.
func expectDecodingError(
    _ bytes: [UInt8], _ version: MQTTVersion, _ kind: MQTTCodecError.Kind, _ packet: String,
    reasonContains: String? = nil, maximumPacketSize: Int = .max, sourceLocation: SourceLocation = #_sourceLocation
) {
    var buffer = ByteBuffer(bytes: bytes)
    do throws(MQTTCodecError) {
        let decoded = try MQTTCodec.decode(from: &buffer, version: version, maximumPacketSize: maximumPacketSize)
        Issue.record("expected a \(kind) error, decoded \(String(describing: decoded))", sourceLocation: sourceLocation)
    } catch {
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
        #expect(error.packet == packet, "\(error)", sourceLocation: sourceLocation)
        if let reasonContains {
            #expect(error.reason.contains(reasonContains), "\(error)", sourceLocation: sourceLocation)
        }
        #expect(buffer.readableBytes == bytes.count, "consumed bytes on error", sourceLocation: sourceLocation)
    }
}

/// Expects encoding `packet` to throw an error of `kind` about the packet, leaving the buffer untouched.
func expectEncodingError(
    _ packet: MQTTPacket, _ version: MQTTVersion, _ kind: MQTTCodecError.Kind, reasonContains: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var buffer = ByteBuffer(bytes: [0xAA])
    do throws(MQTTCodecError) {
        try MQTTCodec.encode(packet, version: version, into: &buffer)
        Issue.record("expected a \(kind) error encoding \(packet)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
        #expect(error.packet == packet.name, "\(error)", sourceLocation: sourceLocation)
        if let reasonContains {
            #expect(error.reason.contains(reasonContains), "\(error)", sourceLocation: sourceLocation)
        }
        #expect(Array(buffer.readableBytesView) == [0xAA], "wrote bytes on error", sourceLocation: sourceLocation)
    }
}

/// The bytes of an ASCII string.
func ascii(_ string: String) -> [UInt8] { Array(string.utf8) }

/// One packet of every type, with every property its type allows for MQTT 5, and variants that
/// exercise the optional parts; for MQTT 3.1.1 the forms that version can carry.
func samplePackets(_ version: MQTTVersion) -> [MQTTPacket] {
    let users = [MQTTUserProperty(name: "k", value: "v"), MQTTUserProperty(name: "k", value: "second ✓")]
    let v5 = version == .v5
    func props(_ make: (inout MQTTProperties) -> Void) -> MQTTProperties {
        var properties = MQTTProperties()
        if v5 { make(&properties) }
        return properties
    }

    let connectProperties = props {
        $0.sessionExpiryInterval = 3600
        $0.receiveMaximum = 20
        $0.maximumPacketSize = 1 << 20
        $0.topicAliasMaximum = 10
        $0.requestResponseInformation = 1
        $0.requestProblemInformation = 0
        $0.userProperties = users
        $0.authenticationMethod = "SCRAM-SHA-1"
        $0.authenticationData = [1, 2, 3]
    }
    let willProperties = props {
        $0.willDelayInterval = 30
        $0.payloadFormatIndicator = 1
        $0.messageExpiryInterval = 600
        $0.contentType = "text/plain"
        $0.responseTopic = "replies/x"
        $0.correlationData = [9, 8, 7]
        $0.userProperties = users
    }
    let connackProperties = props {
        $0.sessionExpiryInterval = 0
        $0.receiveMaximum = 100
        $0.maximumQoS = 1
        $0.retainAvailable = false
        $0.maximumPacketSize = 65536
        $0.assignedClientIdentifier = "auto-1"
        $0.topicAliasMaximum = 5
        $0.reasonString = "welcome"
        $0.userProperties = users
        $0.wildcardSubscriptionAvailable = true
        $0.subscriptionIdentifiersAvailable = false
        $0.sharedSubscriptionAvailable = true
        $0.serverKeepAlive = 45
        $0.responseInformation = "resp/"
        $0.serverReference = "other.example"
        $0.authenticationMethod = "SCRAM-SHA-1"
        $0.authenticationData = [4, 5]
    }
    let publishProperties = props {
        $0.payloadFormatIndicator = 0
        $0.messageExpiryInterval = 60
        $0.topicAlias = 3
        $0.responseTopic = "reply/to"
        $0.correlationData = []
        $0.userProperties = users
        $0.subscriptionIdentifiers = [1, 300, 268_435_455]
        $0.contentType = "application/json"
    }
    let reasonProperties = props {
        $0.reasonString = "because"
        $0.userProperties = users
    }

    var packets: [MQTTPacket] = [
        .connect(
            MQTTConnect(
                clientID: "client-1", cleanStart: true, keepAlive: 60, username: "user", password: [0, 1, 255],
                will: MQTTWill(
                    topic: "clients/client-1/status", payload: ascii("gone"), qos: .exactlyOnce, retain: true,
                    properties: willProperties),
                properties: connectProperties)),
        .connect(MQTTConnect(clientID: "", cleanStart: false, keepAlive: 0)),
        .connect(MQTTConnect(clientID: "ü", cleanStart: true, keepAlive: 5, username: "only-user")),
        .connack(MQTTConnAck(sessionPresent: true, reasonCode: 0, properties: connackProperties)),
        .connack(MQTTConnAck(sessionPresent: false, reasonCode: v5 ? 0x87 : 5)),
        .publish(MQTTPublish(topic: "a/b", payload: ascii("hello"), properties: publishProperties)),
        .publish(
            MQTTPublish(
                topic: "a/b/c", payload: [], qos: .atLeastOnce, retain: true, dup: true, packetID: 1,
                properties: publishProperties)),
        .publish(MQTTPublish(topic: "/", payload: Array(repeating: 0x5A, count: 300), qos: .exactlyOnce, packetID: 65535)),
        .puback(MQTTAck(packetID: 7)),
        .pubrec(MQTTAck(packetID: 8, reasonCode: v5 ? 0x10 : 0)),
        .pubrel(MQTTAck(packetID: 9, reasonCode: v5 ? 0x92 : 0, properties: reasonProperties)),
        .pubcomp(MQTTAck(packetID: 10, reasonCode: 0, properties: reasonProperties)),
        .subscribe(
            MQTTSubscribe(
                packetID: 11,
                subscriptions: [
                    MQTTSubscription(topicFilter: "sport/#", qos: .atMostOnce),
                    MQTTSubscription(
                        topicFilter: "a/+/c", qos: .exactlyOnce, noLocal: v5, retainAsPublished: v5,
                        retainHandling: v5 ? 2 : 0),
                    MQTTSubscription(topicFilter: "$share/group/x", qos: .atLeastOnce, retainHandling: v5 ? 1 : 0),
                ],
                properties: props {
                    $0.subscriptionIdentifiers = [42]
                    $0.userProperties = users
                })),
        .suback(MQTTSubAck(packetID: 11, reasonCodes: v5 ? [0, 1, 2, 0x80, 0x8F] : [0, 1, 2, 0x80], properties: reasonProperties)),
        .unsubscribe(
            MQTTUnsubscribe(packetID: 12, topicFilters: ["sport/#", "a/+/c"], properties: props { $0.userProperties = users })),
        .unsuback(MQTTUnsubAck(packetID: 12, reasonCodes: v5 ? [0x00, 0x11] : [], properties: reasonProperties)),
        .pingreq,
        .pingresp,
        .disconnect(MQTTDisconnect()),
    ]
    if v5 {
        packets += [
            .publish(MQTTPublish(topic: "", payload: [1], properties: props { $0.topicAlias = 3 })),
            .puback(MQTTAck(packetID: 13, reasonCode: 0x10)),
            .disconnect(MQTTDisconnect(reasonCode: 0x04)),
            .disconnect(
                MQTTDisconnect(
                    reasonCode: 0x9C,
                    properties: props {
                        $0.sessionExpiryInterval = 10
                        $0.reasonString = "moved"
                        $0.serverReference = "elsewhere"
                        $0.userProperties = users
                    })),
            .auth(reasonCode: 0, properties: MQTTProperties()),
            .auth(reasonCode: 0x19, properties: MQTTProperties()),
            .auth(
                reasonCode: 0x18,
                properties: props {
                    $0.authenticationMethod = "SCRAM-SHA-1"
                    $0.authenticationData = [7, 7]
                    $0.reasonString = "continue"
                    $0.userProperties = users
                }),
        ]
    }
    return packets
}

/// A packet with first byte `first` and `body`, which must be shorter than 128 bytes.
func packet(_ first: UInt8, _ body: [UInt8]) -> [UInt8] {
    [first, UInt8(body.count)] + body
}
