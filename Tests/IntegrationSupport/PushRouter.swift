import Crypto
import Foundation
import Testing

/// The router with the push plugin's webhook: started, found, and requests signed for it.
/// Separate from the push suites because the reload, tracing and qeo enrollment suites, in
/// other targets, start the same webhook.
enum PushRouter {
    /// The Standard Webhooks signing key.
    static let signingKey = Array("switchyard-test-signing-key-0123".utf8)
    /// `PUSH_SECRET`: the signing key in its `whsec_` form.
    static let secret = "whsec_" + Data(signingKey).base64EncodedString()
    /// The bearer token the webhook instances require (`PUSH_BEARER`).
    static let bearer = "app-token-1"

    /// Standard Webhooks headers for `body`, computed here with swift-crypto, not the plugin's code.
    static func signed(
        _ body: String, id: String = UUID().uuidString, timestamp: Int = Int(Date().timeIntervalSince1970), bearer: String? = bearer
    )
        -> [String: String]
    {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(id).\(timestamp).\(body)".utf8), using: SymmetricKey(data: signingKey))
        var headers = [
            "Content-Type": "application/json", "webhook-id": id, "webhook-timestamp": String(timestamp),
            "webhook-signature": "v1," + Data(mac).base64EncodedString(),
        ]
        if let bearer { headers["Authorization"] = "Bearer \(bearer)" }
        return headers
    }

    /// The webhook's base URL, from the instance's "webhook listening on" log line.
    static func webhookURL(of router: RouterProcess) -> String? {
        for line in router.standardError.split(separator: "\n") {
            guard let range = line.range(of: "webhook listening on ") else { continue }
            return String(line[range.upperBound...].prefix { $0 != " " && $0 != "\"" })
        }
        return nil
    }

    /// A router with `core`, `push`, the given instances and routes, and an admin port; waits
    /// until the webhook listens and returns its URL and the admin URL.
    static func start(_ sandbox: Sandbox, instances: String, routes: String) async throws -> (
        router: RouterProcess, webhook: String, admin: String
    ) {
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("push")
        try sandbox.writeRoutes("instances:\n" + instances + "\n" + routes)
        let (router, admin) = try await RouterProcess.startWithAdmin(
            sandbox, extra: ["--spool", sandbox.path("spool.db")], environment: ["PUSH_SECRET": secret, "PUSH_BEARER": bearer])
        await router.waitUntil("the webhook to listen") { webhookURL(of: router) != nil }
        return (router, webhookURL(of: router) ?? "", "http://" + admin)
    }

    /// The authenticated, signed webhook instance `push`; `REGISTRY` stands for its token registry.
    static let webhookInstance = """
          push: { plugin: push, listen: "127.0.0.1:0", auth: { bearer_token: "${PUSH_BEARER}", signing_secret: "${PUSH_SECRET}", tolerance: 60s }, projects: [switchyard-test], registry: "REGISTRY" }
        """

    /// The authenticated webhook with a route from `messages` to `out.jsonl`.
    static func startWebhookToFile(_ sandbox: Sandbox) async throws -> (router: RouterProcess, webhook: String, admin: String) {
        try await start(
            sandbox,
            instances: webhookInstance.replacingOccurrences(of: "REGISTRY", with: sandbox.path("tokens.db")) + """

                  out:  { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))" } }
                """,
            routes: "routes:\n  - { from: push.messages, to: out.write }")
    }
}
