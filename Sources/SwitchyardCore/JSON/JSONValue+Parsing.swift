extension JSONValue {
    /// Parses RFC 8259 JSON (one value, surrounding white space allowed).
    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        let array = bytes as? [UInt8] ?? Array(bytes)
        var parser = JSONParser(bytes: array)
        self = try parser.parseDocument()
    }

    /// Parses JSON text.
    public init(parsing text: String) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8))
    }
}
