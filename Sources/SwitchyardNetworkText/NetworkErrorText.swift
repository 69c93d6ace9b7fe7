import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Network errors as a person reads them: the system's words for a failed connection
/// ("Connection refused"), not the way NIO's and AsyncHTTPClient's error types print
/// themselves (`connection reset (error set): Connection refused) (errno: 111)`).
public enum NetworkErrorText {
    /// Why a connection or request failed, in a few words.
    public static func sentence(for error: any Error) -> String {
        switch error {
        case let failure as NIOConnectionError:
            if let first = failure.connectionErrors.first { return sentence(for: first.error) }
            if failure.dnsAError != nil || failure.dnsAAAAError != nil { return "the host name does not resolve" }
            return "no address to connect to"
        case let failure as IOError:
            return String(cString: strerror(failure.errnoCode))
        case ChannelError.connectTimeout:
            return "no connection within the connect timeout"
        case let failure as NIOSSLError:
            return "TLS failed: \(failure)"
        case let failure as HTTPClientError:
            switch failure {
            case .deadlineExceeded, .readTimeout, .connectTimeout: return "no answer within the timeout"
            case .remoteConnectionClosed: return "the server closed the connection"
            case .bodyLengthMismatch: return "the answer's body does not match its length"
            default: return "\(failure)"
            }
        default:
            return "\(error)"
        }
    }
}
