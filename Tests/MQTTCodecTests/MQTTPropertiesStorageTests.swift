import MQTTCodec
import Testing

/// MQTTProperties keeps its values in shared copy-on-write storage: copies must still behave
/// as independent values.
@Suite struct MQTTPropertiesStorageTests {
    @Test func aCopyChangesAloneAndComparesByValue() {
        var original = MQTTProperties()
        original.contentType = "text/plain"
        original.userProperties.append(MQTTUserProperty(name: "a", value: "1"))
        var copy = original
        #expect(copy == original)
        copy.contentType = "application/json"
        copy.userProperties.append(MQTTUserProperty(name: "b", value: "2"))
        #expect(original.contentType == "text/plain")
        #expect(original.userProperties == [MQTTUserProperty(name: "a", value: "1")])
        #expect(copy.contentType == "application/json")
        #expect(copy.userProperties.count == 2)
        #expect(copy != original)
    }

    @Test func emptyValuesAreEqualHoweverTheyWereMade() {
        var cleared = MQTTProperties()
        cleared.topicAlias = 7
        #expect(cleared != MQTTProperties())
        cleared.topicAlias = nil
        #expect(cleared == MQTTProperties())
        // Writing to one empty value leaves every other empty value empty.
        var written = MQTTProperties()
        written.receiveMaximum = 10
        #expect(written.receiveMaximum == 10)
        #expect(MQTTProperties().receiveMaximum == nil)
    }
}
