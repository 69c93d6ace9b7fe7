import Foundation
import Glibc
internal import SwitchyardRuntime

extension HTTPPiece {
    /// A URL the piece may call: `http` or `https`, with a host whose every address the policy
    /// allows. Unless private addresses are allowed, the name is resolved here and the request
    /// pinned to the address checked.
    struct Target {
        /// The URL as rendered.
        let url: String
        /// The host as written in the URL (brackets of an IPv6 literal removed).
        let host: String
        /// The URL without user-info, for messages.
        let redacted: String
        /// The checked address the request connects to; nil when private addresses are allowed.
        let pinnedAddress: String?

        init(_ url: String, policy: HTTPPiecePolicy) throws(ServiceError) {
            guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
                throw ServiceError(description: "http: '\(Self.redact(url))' is not a URL", refused: true)
            }
            var shown = components
            if shown.user != nil || shown.password != nil {
                shown.user = nil
                shown.password = nil
            }
            redacted = shown.string ?? "the URL"
            guard scheme == "http" || scheme == "https" else {
                throw ServiceError(
                    description: "http: \(scheme) URLs are refused, only http and https are called: \(redacted)", refused: true)
            }
            var host = components.host ?? ""
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw ServiceError(description: "http: \(redacted): the URL has no host", refused: true) }
            self.url = url
            self.host = host
            if policy.allowPrivate {
                pinnedAddress = nil
                return
            }
            let addresses = try Self.resolve(host, redacted: redacted)
            if let refused = addresses.first(where: { !HTTPPiece.isPublic($0) }) {
                throw ServiceError(
                    description:
                        "http: \(redacted): \(host) is \(HTTPPiece.text(of: refused)), a loopback, link-local or private address: refused (preferences.allow_private: true allows it)",
                    refused: true)
            }
            guard let first = addresses.first else {
                throw ServiceError(description: "http: \(redacted): \(host) has no address")
            }
            pinnedAddress = HTTPPiece.text(of: first)
        }

        /// Every address `host` resolves to (an IP literal to itself), as 4 or 16 bytes.
        private static func resolve(_ host: String, redacted: String) throws(ServiceError) -> [[UInt8]] {
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, nil, &hints, &list)
            guard status == 0 else {
                throw ServiceError(description: "http: \(redacted): \(host) does not resolve (\(String(cString: gai_strerror(status))))")
            }
            defer { freeaddrinfo(list) }
            var addresses: [[UInt8]] = []
            var entry = list
            // Bounded: getaddrinfo's list is finite; a name with very many addresses is cut.
            while let current = entry, addresses.count < 64 {
                if let address = current.pointee.ai_addr {
                    switch Int32(address.pointee.sa_family) {
                    case AF_INET:
                        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                            addresses.append(withUnsafeBytes(of: ipv4.pointee.sin_addr) { Array($0) })
                        }
                    case AF_INET6:
                        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                            addresses.append(withUnsafeBytes(of: ipv6.pointee.sin6_addr) { Array($0) })
                        }
                    default:
                        break
                    }
                }
                entry = current.pointee.ai_next
            }
            return addresses
        }

        /// `url` with anything between `://` and `@` hidden.
        static func redact(_ url: String) -> String {
            guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@") else { return url }
            return String(url[..<scheme.upperBound]) + "…" + String(url[at...])
        }
    }

    /// Whether an address (4 or 16 bytes) is public: not loopback, unspecified, link-local,
    /// private (RFC 1918, unique local), CGNAT, multicast, reserved or documentation-only; an
    /// IPv6 address embedding an IPv4 one (mapped, compatible, NAT64, 6to4) is judged by it.
    static func isPublic(_ address: [UInt8]) -> Bool {
        if address.count == 4 { return isPublicIPv4(address[0], address[1], address[2], address[3]) }
        guard address.count == 16 else { return false }
        let first = address[0]
        let second = address[1]
        let zeros = { (range: Range<Int>) in address[range].allSatisfy { $0 == 0 } }
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, which covers :: and ::1).
        if zeros(0..<10), (address[10] == 0xff && address[11] == 0xff) || (address[10] == 0 && address[11] == 0) {
            return isPublicIPv4(address[12], address[13], address[14], address[15])
        }
        // 64:ff9b::/96, NAT64.
        if first == 0x00, second == 0x64, address[2] == 0xff, address[3] == 0x9b, zeros(4..<12) {
            return isPublicIPv4(address[12], address[13], address[14], address[15])
        }
        // 2002::/16, 6to4: the IPv4 address follows.
        if first == 0x20, second == 0x02 { return isPublicIPv4(address[2], address[3], address[4], address[5]) }
        if first == 0xff { return false }  // multicast
        if first & 0xfe == 0xfc { return false }  // fc00::/7, unique local
        if first == 0xfe, second & 0xc0 == 0x80 { return false }  // fe80::/10, link-local
        if first == 0xfe, second & 0xc0 == 0xc0 { return false }  // fec0::/10, site-local (deprecated)
        if first == 0x20, second == 0x01, address[2] == 0x0d, address[3] == 0xb8 { return false }  // 2001:db8::/32, documentation
        return true
    }

    private static func isPublicIPv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Bool {
        switch (a, b) {
        case (0, _), (10, _), (127, _): return false  // this network, private, loopback
        case (100, 64...127): return false  // CGNAT
        case (169, 254): return false  // link-local (cloud metadata services)
        case (172, 16...31), (192, 168): return false  // private
        case (192, 0) where c == 0 || c == 2: return false  // IETF protocol assignments, TEST-NET-1
        case (198, 18...19): return false  // benchmarking
        case (198, 51) where c == 100, (203, 0) where c == 113: return false  // TEST-NET-2, -3
        case (224...255, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    /// An address as text (`127.0.0.1`, `::1`).
    static func text(of address: [UInt8]) -> String {
        let family = address.count == 4 ? AF_INET : AF_INET6
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written = address.withUnsafeBytes { bytes in inet_ntop(family, bytes.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard written != nil else { return "an unreadable address" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
