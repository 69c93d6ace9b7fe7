/// Topic names, topic filters and how they match (MQTT 5 section 4.7, 3.1.1 section 4.7).
///
/// Comparison is byte for byte on the UTF-8 encoding: MQTT does no Unicode normalisation, so two
/// strings Swift considers equal (composed and decomposed accents) are different topics.
public enum MQTTTopic {
    private static let slash = UInt8(ascii: "/")
    private static let plus = UInt8(ascii: "+")
    private static let hash = UInt8(ascii: "#")
    private static let dollar = UInt8(ascii: "$")
    private static let sharePrefix = Array("$share/".utf8)

    /// Whether `topic` matches `filter` (+ and # wildcards; a filter `$share/GROUP/rest` matches like `rest`;
    /// topics starting with `$` are not matched by a leading wildcard).
    ///
    /// `+` matches exactly one level, possibly empty; `#`, only as the last level, matches the parent
    /// level and any number of levels below it. An invalid filter or topic name matches nothing.
    public static func matches(filter: String, topic: String) -> Bool {
        let topicBytes = topic.utf8[...]
        if topicBytes.isEmpty || topicBytes.contains(plus) || topicBytes.contains(hash) { return false }
        guard let filterBytes = stripShare(filter.utf8[...]), let first = filterBytes.first else { return false }
        if topicBytes.first == dollar, first == plus || first == hash { return false }

        var filterIndex = filterBytes.startIndex
        // nil once every level of the topic has been matched.
        var topicIndex: Substring.UTF8View.Index? = topicBytes.startIndex
        while true {
            let filterEnd = filterBytes[filterIndex...].firstIndex(of: slash) ?? filterBytes.endIndex
            let filterLevel = filterBytes[filterIndex..<filterEnd]
            let isLastFilterLevel = filterEnd == filterBytes.endIndex
            if filterLevel.elementsEqual(CollectionOfOne(hash)) { return isLastFilterLevel }
            guard let topicStart = topicIndex else { return false }
            let topicEnd = topicBytes[topicStart...].firstIndex(of: slash) ?? topicBytes.endIndex
            if !filterLevel.elementsEqual(CollectionOfOne(plus)) {
                guard filterLevel.elementsEqual(topicBytes[topicStart..<topicEnd]) else { return false }
            }
            topicIndex = topicEnd == topicBytes.endIndex ? nil : topicBytes.index(after: topicEnd)
            if isLastFilterLevel { return topicIndex == nil }
            filterIndex = filterBytes.index(after: filterEnd)
        }
    }

    /// Checks a topic name for PUBLISH (non-empty, no wildcards, no NUL). Returns a reason when invalid.
    public static func problem(withTopicName name: String) -> String? {
        // Every publish in and out is checked: one pass over the bytes, in place.
        var name = name
        return name.withUTF8 { problem(withTopicName: $0) }
    }

    private static func problem(withTopicName bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if bytes.isEmpty { return "topic name is empty" }
        if bytes.count > Int(UInt16.max) { return "topic name is longer than 65535 bytes" }
        var wildcard = false
        for byte in bytes {
            if byte == 0 { return "topic name contains U+0000" }
            if byte == plus || byte == hash { wildcard = true }
        }
        return wildcard ? "topic name contains a wildcard character" : nil
    }

    /// Checks a topic filter for SUBSCRIBE (wildcard placement rules, $share syntax). Returns a reason when
    /// invalid.
    public static func problem(withTopicFilter filter: String) -> String? {
        let bytes = filter.utf8[...]
        if bytes.isEmpty { return "topic filter is empty" }
        if bytes.count > Int(UInt16.max) { return "topic filter is longer than 65535 bytes" }
        if bytes.contains(0) { return "topic filter contains U+0000" }
        var rest = bytes
        if bytes.starts(with: sharePrefix) {
            let afterPrefix = bytes.dropFirst(sharePrefix.count)
            guard let slashIndex = afterPrefix.firstIndex(of: slash) else {
                return "shared subscription has no topic filter after the share name"
            }
            let shareName = afterPrefix[afterPrefix.startIndex..<slashIndex]
            if shareName.isEmpty { return "share name is empty" }
            if shareName.contains(plus) || shareName.contains(hash) { return "share name contains a wildcard character" }
            rest = afterPrefix[afterPrefix.index(after: slashIndex)...]
            if rest.isEmpty { return "shared subscription has an empty topic filter" }
        }
        let levels = rest.split(separator: slash, omittingEmptySubsequences: false)
        for (position, level) in levels.enumerated() {
            if level.contains(hash) {
                guard level.count == 1 else { return "'#' is not a whole level" }
                guard position == levels.count - 1 else { return "'#' is not the last level" }
            }
            if level.contains(plus), level.count != 1 { return "'+' is not a whole level" }
        }
        return nil
    }

    /// The filter without a `$share/GROUP/` prefix; nil if the prefix is there but malformed.
    private static func stripShare(_ filter: Substring.UTF8View) -> Substring.UTF8View? {
        guard filter.starts(with: sharePrefix) else { return filter }
        let afterPrefix = filter.dropFirst(sharePrefix.count)
        guard let slashIndex = afterPrefix.firstIndex(of: slash), slashIndex != afterPrefix.startIndex else { return nil }
        let shareName = afterPrefix[afterPrefix.startIndex..<slashIndex]
        guard !shareName.contains(plus), !shareName.contains(hash) else { return nil }
        return afterPrefix[afterPrefix.index(after: slashIndex)...]
    }
}
