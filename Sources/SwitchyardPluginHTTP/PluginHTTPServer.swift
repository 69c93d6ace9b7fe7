public import Hummingbird
public import HummingbirdCore
import Logging
import ServiceLifecycle
public import SwitchyardPluginKit
import Synchronization

/// One Hummingbird application run by a plugin instance (the push webhook, the qeo enrollment
/// endpoint): started from the router's control thread, which waits until it listens, and
/// stopped gracefully by the instance. Its logs go to the router's log as the instance's.
public final class PluginHTTPServer: Sendable {
    private let running = Mutex(Running())
    private let name: String
    private let context: PluginContext

    /// The server's tasks, for ``stop()``.
    private struct Running {
        var group: ServiceGroup?
        var task: Task<Void, Never>?
    }

    /// A server called `name` in logs (`webhook`, `enroll`) of the instance behind `context`.
    public init(name: String, context: PluginContext) {
        self.name = name
        self.context = context
    }

    /// Binds `host:port` and serves `router`; returns the bound port once listening (within
    /// 10 s), or throws why it cannot.
    public func start<Builder: HTTPResponderBuilder>(
        router: Builder, server: HTTPServerBuilder, host: String, port: Int
    ) throws(PluginError) -> Int where Builder.Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
        var logger = Logger(label: name) { _ in PluginLogHandler(context: self.context) }
        logger.logLevel = .warning
        let bound = BoundPort()
        let application = Application(
            router: router,
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in bound.set(.success(channel.localAddress?.port ?? -1)) },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        let name = name
        let task = Task {
            do {
                try await group.run()
                bound.set(.failure(PluginError("the \(name) server stopped")))
            } catch {
                bound.set(.failure(PluginError("cannot listen on \(host):\(port): \(error)")))
            }
        }
        running.withLock { $0 = Running(group: group, task: task) }
        return try bound.wait(timeout: .seconds(10), what: name).get()
    }

    /// Stops serving: open connections finish their requests, then the server ends.
    public func stop() async {
        let stopping = running.withLock { running in
            defer { running = Running() }
            return running
        }
        await stopping.group?.triggerGracefulShutdown()
        await stopping.task?.value
    }
}
