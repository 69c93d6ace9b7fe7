public import SwitchyardCore

extension ConfigNode {
    /// The location of the value a JSON Pointer (RFC 6901, such as `/qdm/0` or `/listen/port`)
    /// names in this node: its key where it has one, or the deepest node that exists on the
    /// way. Plugins name a configuration value this way in their error messages (ABI section
    /// 6), so the host can point at the route file.
    public func location(ofPointer pointer: String) -> SourceLocation {
        var node = self
        var keyLocation: SourceLocation?
        // The empty pointer is the whole node; anything else starts with "/".
        guard pointer.hasPrefix("/") else { return location }
        for rawToken in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = rawToken.replacing("~1", with: "/").replacing("~0", with: "~")
            switch node.kind {
            case .mapping(let members):
                guard let member = members.first(where: { $0.key == token }) else { return keyLocation ?? node.location }
                keyLocation = member.keyLocation
                node = member.value
            case .sequence(let elements):
                guard let index = Int(token), elements.indices.contains(index) else { return keyLocation ?? node.location }
                keyLocation = nil
                node = elements[index]
            case .scalar:
                return keyLocation ?? node.location
            }
        }
        return keyLocation ?? node.location
    }

    /// Splits a plugin's error message that starts with a JSON Pointer and `": "`
    /// (`"/qdm/0: no such file"`) into the pointer and the rest; nil when it does not.
    public static func pointerPrefix(of message: String) -> (pointer: String, rest: Substring)? {
        guard message.hasPrefix("/"), let separator = message.firstRange(of: ": ") else { return nil }
        let pointer = message[..<separator.lowerBound]
        // A pointer that names no configuration value (a file path in prose, say) still
        // resolves: to the nearest value on its way, at worst the instance itself.
        guard !pointer.contains(" ") else { return nil }
        return (String(pointer), message[separator.upperBound...])
    }
}
