import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import NIOSSL
import QeoRealm
import SwitchyardCore
import SwitchyardPluginHTTP

extension EnrollmentServer {
    /// `GET /ca`.
    func authority() async -> Response {
        do {
            let pem = try await NIOThreadPool.singleton.runIfActive { [settings] in
                try String(contentsOfFile: settings.realm + "/ca.pem", encoding: .utf8)
            }
            return Response(
                status: .ok, headers: [.contentType: "application/x-pem-file"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: pem)))
        } catch {
            context.log(.error, "enroll: reading the realm CA: \(error)")
            return Self.json(.internalServerError, ["error": "internal", "message": "the realm CA cannot be read"])
        }
    }

    /// `POST /enroll`.
    func enroll(_ request: Request, _ context: EnrollmentRequestContext) async -> Response {
        let peer = context.peer
        if let wait = throttle.wait(for: peer) {
            self.context.metric(.counter, "enroll_throttled_total", 1)
            let seconds = max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
            var response = Self.json(
                .tooManyRequests, ["error": "throttled", "message": "too many failed attempts: try again in \(seconds)s"])
            response.headers[.retryAfter] = String(seconds)
            return response
        }
        let body: (code: String, csr: String)
        switch await Self.decode(request) {
        case .success(let fields):
            guard let code = fields["code"], let csr = fields["csr"] else {
                return refuse(.invalid("give \"code\" and \"csr\" (a PKCS #10 request, PEM)"), peer: peer, what: "enroll")
            }
            // What cannot be a code is refused here, without touching the realm.
            guard EnrollmentCode.normalised(code) != nil else { return refuse(.unknownCode, peer: peer, what: "enroll") }
            body = (code, csr)
        case .failure(let refusal): return refusal.response
        }
        let lease = Int(settings.lease.components.seconds)
        return await answer("enroll", peer: peer, counting: "enroll_accepted_total") { authority throws(EnrollmentRefusal) in
            try authority.enroll(code: body.code, request: body.csr, leaseSeconds: lease)
        }
    }

    /// `POST /renew`: fresh permissions for the device of the TLS client certificate.
    func renew(_ request: Request, _ context: EnrollmentRequestContext) async -> Response {
        let member: AuthenticatedMember
        switch await self.member(context) {
        case .success(let authenticated): member = authenticated
        case .failure(let refusal): return refusal.response
        }
        let lease = Int(settings.lease.components.seconds)
        return await answer("renew", peer: context.peer, counting: "enroll_renewed_total") { authority throws(EnrollmentRefusal) in
            try authority.renew(device: member.device, serial: member.serial, leaseSeconds: lease)
        }
    }

    /// The realm member behind the connection's client certificate, or the response refusing.
    func member(_ context: EnrollmentRequestContext) async -> Result<AuthenticatedMember, RefusedRequest> {
        // The TLS handshake already checked the chain against the realm CA.
        let certificate = try? await context.channel.nioSSL_peerCertificate().get()
        guard let certificate, let der = try? certificate.toDERBytes() else {
            return .failure(
                RefusedRequest(
                    response: Self.json(
                        .unauthorized, ["error": "no_certificate", "message": "present the device certificate (TLS client)"])))
        }
        let pem =
            "-----BEGIN CERTIFICATE-----\n" + Data(der).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END CERTIFICATE-----\n"
        let realm = settings.realm
        let found = try? await NIOThreadPool.singleton.runIfActive { () -> AuthenticatedMember? in
            guard let subject = try? RealmCrypto.subject(ofCertificate: pem), let facts = try? RealmCrypto.facts(ofCertificate: pem),
                let ids = Self.identifiers(subject: subject),
                let registry = try? RealmLock.withLock(
                    directory: realm, { () throws(RealmError) in try RealmAuthority(directory: realm).registry }),
                ids.realm == registry.realm, let member = registry.member(device: ids.device), member.user.id == ids.user,
                member.device.serial == nil || member.device.serial == facts.serial
            else { return nil }
            return AuthenticatedMember(realm: ids.realm, device: ids.device, user: ids.user, serial: facts.serial)
        }
        guard let found = found ?? nil else {
            self.context.metric(.counter, "enroll_members_refused_total", 1)
            self.context.log(.warning, "enroll: \(context.peer) presented a certificate of no current realm member")
            return .failure(
                RefusedRequest(
                    response: Self.json(.forbidden, ["error": "revoked", "message": "this certificate belongs to no current member"])))
        }
        return .success(found)
    }

    /// The ids in Qeo's certificate name `CN=<rid> <did> <uid>,O=Qeo`.
    static func identifiers(subject: String) -> (realm: UInt64, device: UInt64, user: UInt64)? {
        guard let common = subject.split(separator: ",").first(where: { $0.hasPrefix("CN=") }) else { return nil }
        let ids = common.dropFirst(3).split(separator: " ").compactMap { UInt64($0, radix: 16) }
        guard ids.count == 3 else { return nil }
        return (ids[0], ids[1], ids[2])
    }

    private func refuse(_ refusal: EnrollmentRefusal, peer: String, what: String) -> Response {
        let (status, code): (HTTPResponse.Status, String) =
            switch refusal {
            case .unknownCode: (.notFound, "unknown_code")
            case .expiredCode: (.gone, "expired_code")
            case .usedCode: (.conflict, "used_code")
            case .revoked: (.forbidden, "revoked")
            case .invalid: (.badRequest, "invalid")
            case .failed: (.internalServerError, "internal")
            }
        if case .failed = refusal {
            context.log(.error, "\(what): \(peer): \(refusal)")
        } else {
            throttle.fail(peer)
            context.log(.warning, "\(what): refused \(peer): \(refusal)")
        }
        context.metric(.counter, "\(what)_refused_\(code)_total", 1)
        return Self.json(status, ["error": code, "message": refusal.description])
    }

    /// Runs `body` on the realm and answers with the credentials it made (counted, logged), or
    /// with its refusal.
    private func answer(
        _ what: String, peer: String, counting counter: String,
        _ body: @escaping @Sendable (inout RealmAuthority) throws(EnrollmentRefusal) -> Enrollment
    ) async -> Response {
        switch await withRealm(body) {
        case .success(let enrollment):
            context.metric(.counter, counter, 1)
            let identity = enrollment.identity
            context.log(
                .notice, "\(what): \(peer): device \(QeoIdentifier.hex(identity.device)) of user \(QeoIdentifier.hex(identity.user))")
            return Self.answer(enrollment)
        case .failure(let refusal):
            return refuse(refusal, peer: peer, what: what)
        }
    }

    /// Runs `body` on the realm under its lock, on NIO's blocking-work threads (it reads and
    /// writes files and signs).
    private func withRealm(
        _ body: @escaping @Sendable (inout RealmAuthority) throws(EnrollmentRefusal) -> Enrollment
    ) async -> Result<Enrollment, EnrollmentRefusal> {
        let realm = settings.realm
        let outcome = try? await NIOThreadPool.singleton.runIfActive { () -> Result<Enrollment, EnrollmentRefusal> in
            do {
                return try RealmLock.withLock(directory: realm) { () throws(RealmError) in
                    var authority = try RealmAuthority(directory: realm)
                    do throws(EnrollmentRefusal) {
                        return .success(try body(&authority))
                    } catch {
                        return .failure(error)
                    }
                }
            } catch {
                return .failure(.failed("\(error)"))
            }
        }
        return outcome ?? .failure(.failed("the server is stopping"))
    }

    /// The credentials as JSON: what a device directory holds, but the key.
    private static func answer(_ enrollment: Enrollment) -> Response {
        var fields = [
            "realm": "0x" + QeoIdentifier.hex(enrollment.identity.realm), "user": "0x" + QeoIdentifier.hex(enrollment.identity.user),
            "device": "0x" + QeoIdentifier.hex(enrollment.identity.device), "domain": String(enrollment.identity.domain),
            "certificate": enrollment.certificate, "ca": enrollment.authority, "governance": enrollment.governance,
            "permissions": enrollment.permissions, "lease_until": enrollment.leaseUntil.formatted(.iso8601),
        ]
        if let list = enrollment.revocationList { fields["crl"] = list }
        return json(.ok, fields)
    }

    /// A JSON object of strings, read from a bounded body.
    private static func decode(_ request: Request) async -> Result<[String: String], RefusedRequest> {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: EnrollmentSettings.maximumBody)
        } catch {
            return .failure(
                RefusedRequest(
                    response: json(.contentTooLarge, ["error": "too_large", "message": "at most \(EnrollmentSettings.maximumBody) bytes"])))
        }
        // The router's own parser: bounded in depth and size, fuzzed.
        guard case .object(let object)? = try? JSONValue(parsing: buffer.readableBytesView) else {
            return .failure(RefusedRequest(response: json(.badRequest, ["error": "invalid", "message": "the body is not a JSON object"])))
        }
        return .success(object.compactMapValues(\.stringValue))
    }

    static func json(_ status: HTTPResponse.Status, _ fields: [String: String]) -> Response {
        .json(.object(fields.mapValues { .string($0) }), status: status)
    }
}
