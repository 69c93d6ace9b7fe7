import NIOCore
import NIOPosix
import SIPCodec
import SwitchyardCore
import SwitchyardPluginKit

/// One sip instance's user agent, on a ``SIPTransport``: the coordinator the plugin talks to.
/// It starts and stops the instance, hands what the sockets bring to the part that owns it
/// (``SIPAgent+Transport``), carries out `sip.Control` actions and reconfigures.
///
/// The state lives in its collaborators, one owner each: ``SIPClientTransactions`` and
/// ``SIPServerTransactions`` (RFC 3261 §17), ``SIPDigestClient`` (challenges),
/// ``SIPRegistrationClient``, ``SIPMessageSender`` and ``SIPMessageInbox`` (pager-mode
/// messaging), all on one event loop and sharing only ``SIPAgentEnvironment``. The entry points
/// hop onto that loop.
final class SIPAgent: Sendable {
    /// The context, loop, sockets, configuration and history every collaborator reads.
    let environment: SIPAgentEnvironment
    let clients: SIPClientTransactions
    let requests: SIPDigestClient
    let servers: SIPServerTransactions
    let registration: SIPRegistrationClient
    let sender: SIPMessageSender
    let inbox: SIPMessageInbox
    private let _sweepTask: NIOLoopBoundBox<RepeatedTask?>

    /// Forgets the inbox's answered MESSAGEs past their window, every second while started.
    private var sweepTask: RepeatedTask? {
        get { _sweepTask.value }
        _modify { yield &_sweepTask.value }
    }
    var context: PluginContext { environment.context }
    var eventLoop: any EventLoop { environment.eventLoop }
    var transport: SIPTransport { environment.transport }
    /// The current configuration (on `eventLoop`).
    var configuration: SIPConfiguration { environment.configuration }

    /// An agent on `eventLoop`: one of the shared group's, unless a test hands in an
    /// `EmbeddedEventLoop` (and the UDP socket, ``SIPTransport/start(datagramChannel:reportingTo:)``).
    init(
        configuration: SIPConfiguration, context: PluginContext, eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    ) {
        environment = SIPAgentEnvironment(configuration: configuration, context: context, eventLoop: eventLoop)
        clients = SIPClientTransactions(environment: environment)
        requests = SIPDigestClient(environment: environment, clients: clients)
        servers = SIPServerTransactions(environment: environment)
        registration = SIPRegistrationClient(environment: environment, requests: requests)
        sender = SIPMessageSender(environment: environment, requests: requests)
        inbox = SIPMessageInbox(environment: environment, servers: servers)
        _sweepTask = .makeBoxSendingValue(nil, as: RepeatedTask?.self, eventLoop: eventLoop)
    }

    // MARK: Entry points (any thread)

    /// Binds the sockets (so a start error reaches the user) and starts registering.
    func start() throws {
        context.metric(.gauge, "ready", 0)
        context.metric(.gauge, "registered", 0)
        // Read on the loop, where it lives (no reconfigure can run before start returns).
        let configuration = try eventLoop.submit { self.configuration }.wait()
        try openHistory(configuration)
        let bound = eventLoop.flatSubmit { self.transport.start(reportingTo: self) }
        do {
            try bound.wait()
        } catch {
            let listen = "\(configuration.listenHost):\(configuration.listenPort)"
            throw PluginError("sip: cannot listen on \(listen) (UDP and TCP): \(error)")
        }
        eventLoop.execute {
            self.context.log(
                .info,
                "listening on \(self.configuration.listenHost):\(self.transport.port) (UDP, TCP)"
                    + (self.transport.tlsPort.map { ", TLS on \($0)" } ?? ""))
            self.sweepTask = self.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
                self.inbox.sweep()
            }
            self.registration.start()
        }
    }

    /// Unregisters (waiting up to a few seconds for the registrar) and closes the sockets;
    /// what is still waiting is failed so the router can account for it.
    func stop() {
        let unregistered = eventLoop.flatSubmit { self.registration.unregister() }
        _ = try? unregistered.wait()
        let closed = eventLoop.flatSubmit {
            self.environment.stopped = true
            self.sweepTask?.cancel()
            self.registration.stop()
            self.clients.failAll("sip instance stopped")
            self.inbox.refuseAll()
            return self.transport.stop()
        }
        _ = try? closed.wait()
        // Every MESSAGE answered or sent before the stop is in the history before the store
        // is closed to this instance.
        environment.history?.flush()
    }

    /// Sends one MESSAGE for a delivery from the send port (on the event loop).
    func send(_ outgoing: SIPEnvelopes.Outgoing, delivery: Delivery) {
        sender.send(outgoing, delivery: delivery)
    }

    /// The router settled an emitted MESSAGE (any thread).
    func settled(token: UInt64, outcome: DeliveryOutcome) {
        inbox.settled(token: token, outcome: outcome)
    }
}
