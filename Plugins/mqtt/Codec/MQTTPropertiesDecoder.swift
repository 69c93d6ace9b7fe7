/// Decodes one MQTT 5 property list, checking each property is allowed where the list sits,
/// occurs no more often than allowed, and has a valid value.
///
/// It owns what only decoding a list needs: the reader over the list's bytes, where the list
/// sits, the properties read so far and which have been seen. ``MQTTProperties`` itself is the
/// values alone, as the code that builds and reads packets uses them.
struct MQTTPropertiesDecoder {
    private var reader: MQTTReader
    private let context: MQTTPropertyContext
    private var properties = MQTTProperties()
    /// One bit per property identifier that may not repeat and has been read.
    private var seen: UInt64 = 0

    /// Decodes the list in `reader`, which holds exactly the list's bytes.
    private init(reader: MQTTReader, context: MQTTPropertyContext) {
        self.reader = reader
        self.context = context
    }

    /// Reads a property length from `reader` and decodes the properties it covers.
    static func decode(_ context: MQTTPropertyContext, from reader: inout MQTTReader) throws(MQTTCodecError) -> MQTTProperties {
        let length = try reader.readVariableByteInteger("property length")
        let list = try reader.readReader(length: length, "property length")
        var decoder = MQTTPropertiesDecoder(reader: list, context: context)
        return try decoder.decode()
    }

    private mutating func decode() throws(MQTTCodecError) -> MQTTProperties {
        while !reader.isAtEnd {
            let rawID = try reader.readVariableByteInteger("property identifier")
            guard rawID <= Int(UInt8.max), let id = MQTTPropertyID(rawValue: UInt8(rawID)) else {
                throw .malformed("unknown property identifier 0x\(String(rawID, radix: 16, uppercase: true))")
            }
            guard id.isAllowed(in: context) else {
                throw .malformed("\(id.name) property is not allowed in \(context.description)")
            }
            if !id.isRepeatable(in: context) {
                let bit: UInt64 = 1 << UInt64(id.rawValue)
                guard seen & bit == 0 else { throw .protocolViolation("\(id.name) property appears more than once") }
                seen |= bit
            }
            try decodeValue(of: id)
        }
        if let problem = properties.problem(in: context) { throw .protocolViolation(problem) }
        return properties
    }

    /// Reads the value of property `id` into the properties.
    private mutating func decodeValue(of id: MQTTPropertyID) throws(MQTTCodecError) {
        let field = "\(id.name) property"
        switch id {
        case .payloadFormatIndicator: properties.payloadFormatIndicator = try reader.readByte(field)
        case .messageExpiryInterval: properties.messageExpiryInterval = try reader.readUInt32(field)
        case .contentType: properties.contentType = try reader.readString(field)
        case .responseTopic: properties.responseTopic = try reader.readString(field)
        case .correlationData: properties.correlationData = try reader.readBinary(field)
        case .subscriptionIdentifier:
            let identifier = try reader.readVariableByteInteger(field)
            properties.subscriptionIdentifiers.append(identifier)
        case .sessionExpiryInterval: properties.sessionExpiryInterval = try reader.readUInt32(field)
        case .assignedClientIdentifier: properties.assignedClientIdentifier = try reader.readString(field)
        case .serverKeepAlive: properties.serverKeepAlive = try reader.readUInt16(field)
        case .authenticationMethod: properties.authenticationMethod = try reader.readString(field)
        case .authenticationData: properties.authenticationData = try reader.readBinary(field)
        case .requestProblemInformation: properties.requestProblemInformation = try reader.readByte(field)
        case .willDelayInterval: properties.willDelayInterval = try reader.readUInt32(field)
        case .requestResponseInformation: properties.requestResponseInformation = try reader.readByte(field)
        case .responseInformation: properties.responseInformation = try reader.readString(field)
        case .serverReference: properties.serverReference = try reader.readString(field)
        case .reasonString: properties.reasonString = try reader.readString(field)
        case .receiveMaximum: properties.receiveMaximum = try reader.readUInt16(field)
        case .topicAliasMaximum: properties.topicAliasMaximum = try reader.readUInt16(field)
        case .topicAlias: properties.topicAlias = try reader.readUInt16(field)
        case .maximumQoS: properties.maximumQoS = try reader.readByte(field)
        case .retainAvailable: properties.retainAvailable = try readFlag(field)
        case .userProperty:
            let name = try reader.readString("\(field) name")
            let value = try reader.readString("\(field) value")
            properties.userProperties.append(MQTTUserProperty(name: name, value: value))
        case .maximumPacketSize: properties.maximumPacketSize = try reader.readUInt32(field)
        case .wildcardSubscriptionAvailable: properties.wildcardSubscriptionAvailable = try readFlag(field)
        case .subscriptionIdentifiersAvailable: properties.subscriptionIdentifiersAvailable = try readFlag(field)
        case .sharedSubscriptionAvailable: properties.sharedSubscriptionAvailable = try readFlag(field)
        }
    }

    /// Reads a byte that must be 0 or 1.
    private mutating func readFlag(_ field: String) throws(MQTTCodecError) -> Bool {
        let value = try reader.readByte(field)
        guard value <= 1 else { throw .protocolViolation("\(field) is \(value), not 0 or 1") }
        return value == 1
    }
}

extension MQTTReader {
    /// Reads a property length and the properties it covers (see ``MQTTPropertiesDecoder``).
    mutating func readProperties(_ context: MQTTPropertyContext) throws(MQTTCodecError) -> MQTTProperties {
        try MQTTPropertiesDecoder.decode(context, from: &self)
    }
}
