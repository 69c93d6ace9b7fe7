import Foundation

/// Certificates for TLS peers in the tests, made with `openssl`.
enum TestCertificates {
    /// Writes `ca.pem`/`ca.key` (a CA with a self-signed certificate) and `server.pem`/
    /// `server.key` (signed by it for CN 127.0.0.1 with SANs IP 127.0.0.1 and DNS localhost) into
    /// `directory`. P-256 keys: quick to make.
    static func write(in directory: URL) throws {
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        let extensions = """
            basicConstraints = CA:FALSE
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectAltName = IP:127.0.0.1, DNS:localhost

            """
        try extensions.write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        let commands: [[String]] = [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=Switchyard Test CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=127.0.0.1",
            ],
            [
                "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-CAserial", path("ca.srl"), "-out", path("server.pem"), "-days", "2",
                "-extfile", path("server.ext"),
            ],
        ]
        for arguments in commands {
            let result = try Tool.run("/usr/bin/openssl", arguments, timeout: .seconds(30))
            guard result.status == 0 else {
                throw SandboxError("openssl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.output)")
            }
        }
    }
}
