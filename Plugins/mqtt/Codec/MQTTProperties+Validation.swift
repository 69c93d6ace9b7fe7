extension MQTTProperties {
    /// The first rule of MQTT 5 the property values break in `context`, if any.
    func problem(in context: MQTTPropertyContext) -> String? {
        if let value = payloadFormatIndicator, value > 1 {
            return "Payload Format Indicator is \(value), not 0 or 1"
        }
        if let value = requestProblemInformation, value > 1 {
            return "Request Problem Information is \(value), not 0 or 1"
        }
        if let value = requestResponseInformation, value > 1 {
            return "Request Response Information is \(value), not 0 or 1"
        }
        if let value = maximumQoS, value > 1 {
            return "Maximum QoS is \(value), not 0 or 1"
        }
        if receiveMaximum == 0 { return "Receive Maximum is 0" }
        if maximumPacketSize == 0 { return "Maximum Packet Size is 0" }
        if topicAlias == 0 { return "Topic Alias is 0" }
        for identifier in subscriptionIdentifiers where !(1...maximumVariableByteInteger).contains(identifier) {
            return "Subscription Identifier \(identifier) is out of the range 1 to \(maximumVariableByteInteger)"
        }
        if context != .publish, subscriptionIdentifiers.count > 1 {
            return "Subscription Identifier appears more than once"
        }
        if let topic = responseTopic, let problem = MQTTTopic.problem(withTopicName: topic) {
            return "Response Topic is invalid: \(problem)"
        }
        if context == .connect, authenticationData != nil, authenticationMethod == nil {
            return "Authentication Data without Authentication Method"
        }
        return nil
    }
}
