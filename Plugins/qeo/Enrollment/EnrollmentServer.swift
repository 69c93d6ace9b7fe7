import Foundation
import HTTPTypes
public import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOCore
import NIOPosix
import NIOSSL
import QeoRealm
import SwitchyardConnectionGuard
import SwitchyardPluginHTTP
public import SwitchyardPluginKit

/// A realm's HTTPS endpoint, run by a qeo instance with `enroll:`:
///
/// - `GET /ca`: the realm CA certificate, which a device checks against the fingerprint it got
///   with its code before it trusts this server;
/// - `POST /enroll` `{"code", "csr"}`: a one-time code and a PKCS #10 request (PEM) for the
///   device's credentials;
/// - `POST /renew`, with the device's certificate as the TLS client certificate: fresh
///   permissions, refused once the device or its user is revoked;
/// - the routes of ``MemberRoute``s (the wake feed), for a device authenticated the same way.
///
/// The endpoint's own certificate is issued by the realm CA at each start and never stored.
public final class EnrollmentServer: Sendable {
    let settings: EnrollmentSettings
    let context: PluginContext
    let throttle: EnrollmentThrottle
    private let http: PluginHTTPServer
    private let memberRoutes: [MemberRoute]

    /// A route served to realm members only: the handler gets the authenticated device.
    public struct MemberRoute: Sendable {
        /// `GET` path (`/wake/changes`).
        public var path: String
        /// Answers a member's request.
        public var handler: @Sendable (AuthenticatedMember, Request) async -> Response

        public init(path: String, handler: @escaping @Sendable (AuthenticatedMember, Request) async -> Response) {
            self.path = path
            self.handler = handler
        }
    }

    /// A device that presented a certificate of the realm and is not revoked.
    public struct AuthenticatedMember: Sendable, Equatable {
        public var realm: UInt64
        public var device: UInt64
        public var user: UInt64
        public var serial: UInt64
    }

    public init(settings: EnrollmentSettings, instance: String, context: PluginContext, memberRoutes: [MemberRoute] = []) {
        self.settings = settings
        self.context = context
        self.memberRoutes = memberRoutes
        throttle = EnrollmentThrottle(failures: settings.failures, window: settings.window)
        http = PluginHTTPServer(name: "qeo.\(instance).enroll", context: context)
    }

    /// Issues the endpoint's certificate, binds and serves; returns the bound port.
    public func start() throws(PluginError) -> Int {
        let tls = try serverTLS()
        let router = Router(context: EnrollmentRequestContext.self)
        router.get("/ca") { _, _ in await self.authority() }
        router.post("/enroll") { request, context in await self.enroll(request, context) }
        router.post("/renew") { request, context in await self.renew(request, context) }
        for route in memberRoutes {
            router.get(RouterPath(route.path)) { request, context in
                switch await self.member(context) {
                case .success(let member): return await route.handler(member, request)
                case .failure(let refusal): return refusal.response
                }
            }
        }
        let limits = HTTPConnectionLimits(
            name: "enroll", maximumConnections: settings.maximumConnections, maximumPerPeer: settings.maximumPerPeer,
            headerTimeout: settings.headerTimeout,
            bodyTimeout: settings.bodyTimeout, context: context)
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [HTTPConnectionGuard(limits: limits)], idleTimeout: .seconds(30))
        let server: HTTPServerBuilder
        do {
            server = try .tls(.http1(configuration: http1), tlsConfiguration: tls)
        } catch {
            throw PluginError("enroll: TLS: \(error)")
        }
        let port = try http.start(router: router, server: server, host: settings.listen.host, port: settings.listen.port)
        let host = settings.listen.host.contains(":") ? "[\(settings.listen.host)]" : settings.listen.host
        context.log(.notice, "enrollment listening on https://\(host):\(port)")
        context.metric(.gauge, "enroll_port", Double(port))
        return port
    }

    /// Stops serving.
    public func stop() async { await http.stop() }

    /// The endpoint's TLS: a certificate from the realm CA for the configured names; a client
    /// certificate is optional (enrollment has none yet) and, when given, must chain to the CA.
    private func serverTLS() throws(PluginError) -> TLSConfiguration {
        do {
            let (certificate, key, authority) = try RealmLock.withLock(directory: settings.realm) { () throws(RealmError) in
                let realm = try RealmAuthority(directory: settings.realm)
                return try realm.endpointCertificate(alternativeNames: settings.alternativeNames)
            }
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMBytes(Array((certificate + authority).utf8)).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(key.utf8), format: .pem)))
            tls.certificateVerification = .optionalVerification
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(authority.utf8)))
            return tls
        } catch let error as RealmError {
            throw PluginError("/enroll/realm: \(error)")
        } catch {
            throw PluginError("enroll: TLS: \(error)")
        }
    }
}

/// A request answered with a refusal before it got to its handler's work.
struct RefusedRequest: Error {
    var response: Response
}

/// The request context of the endpoint: Hummingbird's, plus the connection, whose TLS client
/// certificate identifies a member.
struct EnrollmentRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The client's address, without the port; an IPv6 client by its /64, which one host
    /// usually holds whole (so it cannot dodge the throttle by changing addresses).
    var peer: String {
        switch channel.remoteAddress {
        case .v6(let address)?:
            var bytes = address.address.sin6_addr
            let prefix = withUnsafeBytes(of: &bytes) { Array($0.prefix(8)) }
            // An IPv4-mapped address is its IPv4 address.
            if prefix == [0, 0, 0, 0, 0, 0, 0, 0] { return channel.remoteAddress?.ipAddress ?? "unknown" }
            return stride(from: 0, to: 8, by: 2).map { String(format: "%02x%02x", prefix[$0], prefix[$0 + 1]) }.joined(separator: ":")
                + "::/64"
        case let other?: return other.ipAddress ?? "unknown"
        case nil: return "unknown"
        }
    }
}
