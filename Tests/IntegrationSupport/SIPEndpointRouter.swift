import Foundation

/// The router with a sip endpoint of its own and no registrar, as the SIP endpoint suite and
/// the tracing suite (in another target) start it.
enum SIPEndpointRouter {
    /// A router with a sip instance `pager` (alice) listening on a free loopback port with no
    /// registrar, MESSAGEs in to `messages.jsonl` and stdin lines sent to `sendTo`; returns the
    /// router, its admin address and the SIP port.
    static func start(_ sandbox: Sandbox, sendTo: String = "sip:bob@127.0.0.1:9", extra: String = "") async throws -> (
        RouterProcess, String, UInt16
    ) {
        try sandbox.installPlugin("core")
        try sandbox.installPlugin("sip")
        let port = try LoopbackPort.freeForUDPAndTCP()
        try sandbox.writeRoutes(
            """
            instances:
              pager:
                plugin: sip
                identity: { impu: "sip:alice@example.test" }
                listen: { host: 127.0.0.1, port: \(port) }
                send: { to: "\(sendTo)" }
            \(extra)
              in: { plugin: core, console: {} }
              messages: { plugin: core, file: { path: "\(sandbox.path("messages.jsonl"))" } }
            routes:
              - { from: pager.messages, to: messages.write }
              - { from: in.lines, to: pager.send }
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox)
        return (router, admin, port)
    }
}
