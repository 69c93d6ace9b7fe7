import Foundation
import MQTTCodec
import NIOCore
import NIOPosix
import NIOSSL
import SwitchyardNetworkText
import SwitchyardPluginKit

/// What the link makes of the broker's words and of its TLS settings.
enum MQTTBrokerText {
    static func makeSSLContext(_ tls: TLSSettings) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = tls.caFile { configuration.trustRoots = .file(caFile) }
        if let certificateFile = tls.certificateFile, let keyFile = tls.keyFile {
            configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) }
            configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
        }
        configuration.certificateVerification = tls.verify ? .fullVerification : .none
        return try NIOSSLContext(configuration: configuration)
    }

    /// Why a connection could not be made, as the system says it ("Connection refused").
    static func connectFailure(_ error: any Error) -> String {
        if case ChannelError.connectTimeout = error { return "no answer within 10 s" }
        return NetworkErrorText.sentence(for: error)
    }

    static func reasonText(_ properties: MQTTProperties) -> String {
        properties.reasonString.map { ": \($0)" } ?? ""
    }

    static func connectReason(_ code: UInt8, version: MQTTVersion) -> String {
        switch (version, code) {
        case (.v3_1_1, 1): "unacceptable protocol version (1)"
        case (.v3_1_1, 2): "client identifier rejected (2)"
        case (.v3_1_1, 3): "server unavailable (3)"
        case (.v3_1_1, 4): "bad user name or password (4)"
        case (.v3_1_1, 5): "not authorized (5)"
        case (.v5, 0x86): "bad user name or password (0x86)"
        case (.v5, 0x87): "not authorized (0x87)"
        case (.v5, 0x84): "unsupported protocol version (0x84)"
        case (.v5, 0x85): "client identifier not valid (0x85)"
        case (.v5, 0x88): "server unavailable (0x88)"
        case (.v5, 0x89): "server busy (0x89)"
        case (.v5, 0x8A): "banned (0x8a)"
        default: "reason 0x\(String(code, radix: 16))"
        }
    }
}
