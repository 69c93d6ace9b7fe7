import Crypto

/// HTTP Digest authentication as SIP uses it (RFC 3261 §22, RFC 2617, RFC 7616/8760): reading
/// challenges, choosing the strongest, and computing the answer.
public enum SIPDigest {
    /// A digest algorithm, strongest last.
    public enum Algorithm: String, Sendable, Comparable, CaseIterable {
        case md5 = "MD5"
        case sha256 = "SHA-256"

        /// Hex digest of `text`.
        public func hash(_ text: String) -> String {
            let bytes: [UInt8]
            switch self {
            case .md5: bytes = Array(Insecure.MD5.hash(data: Array(text.utf8)))
            case .sha256: bytes = Array(SHA256.hash(data: Array(text.utf8)))
            }
            return bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }

        public static func < (lhs: Algorithm, rhs: Algorithm) -> Bool {
            allCases.firstIndex(of: lhs) ?? 0 < allCases.firstIndex(of: rhs) ?? 0
        }
    }

    /// A `WWW-Authenticate` or `Proxy-Authenticate` challenge.
    public struct Challenge: Sendable, Equatable {
        public var realm: String
        public var nonce: String
        public var opaque: String?
        public var algorithm: Algorithm
        /// Whether `qop=auth` is offered (then it is used).
        public var qopAuth: Bool
        /// The previous nonce expired but the credentials were right (`stale=true`): retry with
        /// the new nonce without treating it as a failure.
        public var stale: Bool

        /// Parses `Digest realm="…", nonce="…", …`; nil for other schemes and for algorithms
        /// this side does not implement.
        public init?(header: String) {
            let trimmed = header.trimmingWhitespace()
            guard trimmed.lowercased().hasPrefix("digest ") else { return nil }
            let parameters = SIPDigest.parameters(String(trimmed.dropFirst("digest ".count)))
            guard let realm = parameters["realm"], let nonce = parameters["nonce"] else { return nil }
            let name = parameters["algorithm"] ?? "MD5"
            guard let algorithm = Algorithm.allCases.first(where: { $0.rawValue.caseInsensitiveEquals(name) }) else { return nil }
            self.realm = realm
            self.nonce = nonce
            opaque = parameters["opaque"]
            self.algorithm = algorithm
            qopAuth = (parameters["qop"] ?? "").split(separator: ",").contains { $0.trimmingWhitespaceSubstring().lowercased() == "auth" }
            stale = parameters["stale"]?.lowercased() == "true"
        }

        /// The strongest challenge among `headers` (RFC 8760: a server may offer several).
        public static func strongest(in headers: [String]) -> Challenge? {
            headers.compactMap(Challenge.init(header:)).max { $0.algorithm < $1.algorithm }
        }
    }

    /// The `Authorization`/`Proxy-Authorization` value answering `challenge` for a request.
    /// `cnonce` and the nonce count `nc` are used with qop=auth.
    public static func authorization(
        challenge: Challenge, username: String, password: String, method: String, uri: String, cnonce: String, nc: UInt32
    ) -> String {
        let algorithm = challenge.algorithm
        let ha1 = algorithm.hash("\(username):\(challenge.realm):\(password)")
        let ha2 = algorithm.hash("\(method):\(uri)")
        let count = String(nc, radix: 16)
        let paddedCount = String(repeating: "0", count: max(0, 8 - count.count)) + count
        var fields = [
            "username=\"\(username.quotedStringEscaped)\"", "realm=\"\(challenge.realm.quotedStringEscaped)\"",
            "nonce=\"\(challenge.nonce.quotedStringEscaped)\"",
            "uri=\"\(uri.quotedStringEscaped)\"",
        ]
        let response: String
        if challenge.qopAuth {
            response = algorithm.hash("\(ha1):\(challenge.nonce):\(paddedCount):\(cnonce):auth:\(ha2)")
            fields += [
                "response=\"\(response)\"", "algorithm=\(algorithm.rawValue)", "cnonce=\"\(cnonce.quotedStringEscaped)\"", "qop=auth",
                "nc=\(paddedCount)",
            ]
        } else {
            response = algorithm.hash("\(ha1):\(challenge.nonce):\(ha2)")
            fields += ["response=\"\(response)\"", "algorithm=\(algorithm.rawValue)"]
        }
        if let opaque = challenge.opaque { fields.append("opaque=\"\(opaque.quotedStringEscaped)\"") }
        return "Digest " + fields.joined(separator: ", ")
    }

    /// `name=value` and `name="quoted value"` pairs separated by commas.
    static func parameters(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for part in SIPHeaders.splitValues(text) {
            guard let equals = part.firstIndex(of: "=") else { continue }
            let name = part[..<equals].trimmingWhitespaceSubstring().lowercased()
            var value = part[part.index(after: equals)...].trimmingWhitespaceSubstring()
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                value = String(value.dropFirst().dropLast()).replacingEscapes()
            }
            result[name] = value
        }
        return result
    }
}
