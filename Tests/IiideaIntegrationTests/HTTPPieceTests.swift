import Foundation
import Testing

@testable import IntegrationSupport

/// The `http` service piece cannot be turned against the network the router runs in: loopback
/// (as a literal, an IPv4-mapped literal or a name resolving to it) and other schemes are
/// refused unless allowed, redirects are not followed unless allowed, and values rendered
/// into the URL are percent-encoded. Each refusal fails its run at the service, names the
/// setting, is counted, and sends nothing; the router keeps running the rest.
@Suite(.timeLimit(.minutes(2)))
struct HTTPPieceTests {
    /// Answers GET /redirect with a 302 to /landed, any other GET with `{"path": PATH}`, and
    /// appends every path it is asked for to `requests.log`.
    final class Server {
        private let server: PythonServer
        private let log: String
        var port: Int { server.port }

        init(in sandbox: Sandbox) throws {
            let portFile = sandbox.path("http.port")
            log = sandbox.path("requests.log")
            let script = """
                import http.server, json, os, sys
                class Handler(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        with open(sys.argv[2], 'a') as f:
                            f.write(self.path + '\\n')
                        if self.headers.get('Authorization'):
                            with open(sys.argv[2] + '.auth', 'a') as f:
                                f.write(self.path + '\\n')
                        if self.path == '/elsewhere':
                            self.send_response(302)
                            self.send_header('Location', 'http://localhost:%d/landed-elsewhere' % self.server.server_address[1])
                            self.send_header('Content-Length', '0')
                            self.end_headers()
                            return
                        if self.path == '/redirect':
                            self.send_response(302)
                            self.send_header('Location', '/landed')
                            self.send_header('Content-Length', '0')
                            self.end_headers()
                            return
                        body = json.dumps({'path': self.path}).encode()
                        self.send_response(200)
                        self.send_header('Content-Type', 'application/json')
                        self.send_header('Content-Length', str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    def log_message(self, *args):
                        pass
                server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
                with open(sys.argv[1] + '.tmp', 'w') as f:
                    f.write('%d %d' % (server.server_address[1], os.getpid()))
                os.rename(sys.argv[1] + '.tmp', sys.argv[1])
                server.serve_forever()
                """
            server = try PythonServer(arguments: ["-c", script, portFile, log], portFile: portFile, what: "the HTTP server")
        }

        /// The paths asked for with an Authorization header.
        var authorized: [String] {
            ((try? String(contentsOfFile: log + ".auth", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// The paths asked for so far.
        var requests: [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        func stop() { server.stop() }
    }

    @Test func refusalsAreNamedCountedAndSendNothingWhileAllowedCallsWork() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let server = try Server(in: sandbox)
        defer { server.stop() }
        let port = server.port
        func iiidea(_ id: String, _ preferences: String) -> String {
            """
              - id: \(id)
                trigger: { port: clock.tick }
                service: { piece: http, preferences: { \(preferences) } }
                action: { port: out.write }
            """
        }
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms, count: 1 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiideas:
            \(iiidea("loopback", #"url: "http://127.0.0.1:\#(port)/loopback""#))
            \(iiidea("resolved", #"url: "http://localhost:\#(port)/resolved""#))
            \(iiidea("mapped", #"url: "http://[::ffff:127.0.0.1]:\#(port)/mapped""#))
            \(iiidea("scheme", #"url: "file:///etc/passwd", allow_private: true"#))
            \(iiidea("redirect-off", #"url: "http://127.0.0.1:\#(port)/redirect", allow_private: true"#))
            \(iiidea("redirect-on", #"url: "http://127.0.0.1:\#(port)/redirect", allow_private: true, max_redirects: 1"#))
            \(iiidea("encoded", #"url: "http://127.0.0.1:\#(port)/encoded/{{body.time}}?n={{body.count}}", allow_private: true"#))
            """)
        let (router, admin) = try await RouterProcess.startWithAdmin(sandbox, extra: ["--spool", sandbox.path("state.db")])
        let refusals = [
            (
                "loopback",
                "127.0.0.1 is 127.0.0.1, a loopback, link-local or private address: refused (preferences.allow_private: true allows it)"
            ),
            ("resolved", "localhost is "), ("mapped", "::ffff:127.0.0.1 is "),
            ("scheme", "file URLs are refused, only http and https are called"),
            ("redirect-off", "answered 302, a redirect; not followed (redirects are off: preferences.max_redirects)"),
        ]
        for (id, message) in refusals {
            await router.waitUntil("\(id) refused") {
                router.standardError.split(separator: "\n").contains { $0.contains("iiidea=\(id)") && $0.contains(message) }
            }
            let counted = try MetricsExposition.pluginMetric("http_refused_total", instance: "iiidea:\(id)", admin: admin)
            #expect(counted == 1, "\(id)")
        }
        await router.waitUntil("the allowed calls answered") { sandbox.lines(of: "out.jsonl").count == 2 }
        #expect(try HTTPExchange.send("http://\(admin)/healthz").status == 200)
        #expect(router.stop() == 0)

        let paths = Set(try sandbox.jsonLines(of: "out.jsonl").compactMap { $0["path"] as? String })
        #expect(paths.contains("/landed"), "the redirect followed: \(paths)")
        let encoded = try #require(paths.first { $0.hasPrefix("/encoded/") })
        // The time's colons arrive encoded: an envelope value cannot add URL syntax.
        #expect(encoded.contains("%3A") && !encoded.dropFirst("/encoded/".count).contains(":"), "\(encoded)")
        #expect(encoded.hasSuffix("?n=1"), "\(encoded)")
        #expect(server.requests.sorted() == ["/redirect", "/redirect", "/landed", encoded].sorted(), "the refused calls sent nothing")
    }

    @Test func credentialsAreNotCarriedToAnotherOriginByARedirect() async throws {
        let sandbox = try Sandbox()
        try sandbox.installPlugin("core")
        let server = try Server(in: sandbox)
        defer { server.stop() }
        try sandbox.writeRoutes(
            """
            instances:
              clock: { plugin: core, timer: { interval: 10ms, count: 1 } }
              out:   { plugin: core, file: { path: "\(sandbox.path("out.jsonl"))", format: body } }
            iiideas:
              - id: away
                trigger: { port: clock.tick }
                service:
                  piece: http
                  preferences:
                    url: "http://127.0.0.1:\(server.port)/elsewhere"
                    headers: { Authorization: "Bearer secret-token" }
                    allow_private: true
                    max_redirects: 1
                action: { port: out.write }
            """)
        let (router, _) = try await RouterProcess.startWithAdmin(sandbox, extra: ["--spool", sandbox.path("state.db")])
        await router.waitUntil("the call answered") { sandbox.lines(of: "out.jsonl").count == 1 }
        #expect(router.stop() == 0)
        // localhost is another origin than 127.0.0.1: the redirect went there without the token.
        #expect(server.requests == ["/elsewhere", "/landed-elsewhere"])
        #expect(server.authorized == ["/elsewhere"])
    }
}
