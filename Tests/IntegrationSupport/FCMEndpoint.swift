import Foundation
import Testing

/// The local FCM HTTP v1 and OAuth2 token endpoint of `fcm_endpoint.py`, with a service account
/// made for it: a fresh RSA key (openssl) whose public half the endpoint verifies assertions with.
final class FCMEndpoint {
    static let project = "switchyard-test"
    static let clientEmail = "router@switchyard-test.iam.gserviceaccount.com"
    static let audience = "https://oauth2.googleapis.com/token"

    private let server: PythonServer
    /// The service-account key file to give the push instance.
    let serviceAccountFile: String
    var baseURL: String { "http://127.0.0.1:\(server.port)" }

    init(in sandbox: Sandbox) throws {
        let key = sandbox.path("sa-key.pem")
        let publicKey = sandbox.path("sa-public.pem")
        try Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
        try Self.openssl(["pkey", "-in", key, "-pubout", "-out", publicKey])
        let portFile = sandbox.path("fcm.port")
        server = try PythonServer(
            arguments: [Self.script, portFile, publicKey, Self.clientEmail, Self.audience, Self.project], portFile: portFile,
            what: "the FCM endpoint")
        let account: [String: String] = [
            "type": "service_account", "project_id": Self.project, "private_key_id": "test-key-1",
            "private_key": try String(contentsOfFile: key, encoding: .utf8), "client_email": Self.clientEmail,
            "token_uri": "http://127.0.0.1:\(server.port)/token",
        ]
        serviceAccountFile = sandbox.path("service-account.json")
        try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: serviceAccountFile))
    }

    func stop() { server.stop() }

    private static var script: String {
        BuildProducts.packageRoot.appendingPathComponent("Tests/IntegrationTests/Support/fcm_endpoint.py").path
    }

    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcess.start(process)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SandboxError("openssl \(arguments.joined(separator: " ")) failed") }
    }

    /// Makes the next sends answer these (`{"status": 503}`, `{"status": 429, "retry_after": 1}`…).
    func script(_ answers: [[String: Any]]) throws {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: answers), as: UTF8.self)
        let answer = try HTTPExchange.send(
            baseURL + "/control/script", method: "POST", headers: ["Content-Type": "application/json"], body: body)
        #expect(answer.status == 200)
    }

    /// One request the endpoint saw.
    struct Seen {
        var kind: String
        var verdict: String
        var at: Double
        var message: [String: Any]?
        /// The request's `traceparent` header, if it had one.
        var traceparent: String?
    }

    /// Every request so far.
    func log() throws -> [Seen] {
        let answer = try HTTPExchange.send(baseURL + "/control/log")
        let entries = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [[String: Any]] ?? []
        return entries.map { entry in
            Seen(
                kind: entry["kind"] as? String ?? "", verdict: entry["verdict"] as? String ?? "", at: entry["at"] as? Double ?? 0,
                message: (entry["body"] as? [String: Any])?["message"] as? [String: Any], traceparent: entry["traceparent"] as? String)
        }
    }

    /// The sends so far.
    func sends() throws -> [Seen] { try log().filter { $0.kind == "send" } }
}
