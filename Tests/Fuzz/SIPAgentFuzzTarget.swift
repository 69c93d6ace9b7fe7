// libFuzzer entry point for the SIP user agent, stateful (built by scripts/fuzz): one agent,
// started on loopback with a registrar that never answers by itself, is reset before each input
// and sends a REGISTER; then the input, split at NUL bytes, is a sequence of datagrams handed
// to the agent as if they came off its UDP socket (responses to its transactions, requests from
// peers), with commands between them. A datagram may say `$B`, `$C` and `$I` for the branch,
// CSeq number and Call-ID of the agent's REGISTER, and `$b`, `$c`, `$i` for those of its
// MESSAGE, so the fuzzer can answer them. Commands:
//   !m  then a sip.Send body (JSON): the router delivers it to the agent's send port
//   !r  register (the refresh the registration timer runs)
//   !u  unregister
//   !a  the router settles the last MESSAGE emitted as accepted (!x rejected, !y retry)
//   !e  a Timer E/F/K fires on every client transaction
// What may not happen: a trap, a sanitizer report, the agent stalling its event loop, or a
// request the agent sends that does not parse (a header value that broke its line).
import Foundation
import NIOCore
import SwitchyardABI
import SwitchyardCore

@testable import SIPCodec
@testable import SIPPlugin
@testable import SwitchyardPluginKit

/// The settle token of the last MESSAGE the agent emitted (0: none). Only the fuzzing thread
/// and the agent's event loop touch it, never at once: every step waits for the loop.
nonisolated(unsafe) var lastSettleToken: UInt64 = 0

nonisolated(unsafe) private let host: UnsafeMutablePointer<sy_host_api_v2> = {
    let table = UnsafeMutablePointer<sy_host_api_v2>.allocate(capacity: 1)
    table.initialize(
        to: sy_host_api_v2(
            struct_size: UInt32(MemoryLayout<sy_host_api_v2>.size), reserved: 0,
            emit: { _, _, _, token in
                lastSettleToken = token
                return 0
            },
            ack: { _, _, _, _ in }, log: { _, _, _ in }, metric: { _, _, _, _ in }, piece_done: { _, _, _, _ in },
            log_enabled: { _, _ in 0 }, state_get: { _, _, _ in SY_ERR_FAILED }, state_put: { _, _, _ in SY_ERR_FAILED },
            state_delete: { _, _ in SY_ERR_FAILED }, state_scan: { _, _, _, _ in SY_ERR_FAILED },
            hold_acquire: { _, _, _, _, _ in SY_ERR_FAILED }, hold_release: { _, _ in }, source_done: { _, _ in }, sink_ready: { _, _ in }))
    return table
}()

/// A UDP socket the registrar URI points at, so the agent's sends succeed; never read.
private let registrarPort: Int = {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            _ = bind(socket, $0, length)
            _ = getsockname(socket, $0, &length)
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}()

private let agent: SIPAgent = {
    let config: JSONValue = [
        "identity": ["impu": "sip:alice@example.test", "password": "secret", "display_name": "Alice"],
        "transport": "udp", "listen": "127.0.0.1:0", "proxy": .string("sip:127.0.0.1:\(registrarPort)"),
        "register": ["expires": 600], "receive": ["accept": ["text/plain", "application/json"]],
    ]
    let context = PluginContext(host: UnsafePointer(host), context: must { OpaquePointer(bitPattern: 1) })
    let agent = SIPAgent(configuration: must { try SIPConfiguration(config: config) }, context: context)
    must { try agent.start() }
    return agent
}()

private let peer = SIPPeer(transport: .udp, address: must { try SocketAddress(ipAddress: "127.0.0.1", port: 5062) }, connection: nil)

/// FUZZ_TRACE=1 prints the agent's state after each step (for replaying one input).
private let tracing = getenv("FUZZ_TRACE") != nil

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSIPAgent(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let steps = bytes.split(separator: 0, omittingEmptySubsequences: true).prefix(32)
    onLoop {
        reset()
        agent.registration.register()
    }
    for step in steps {
        onLoop {
            run(Array(step))
            for transaction in agent.clients.transactions.values {
                do throws(SIPParseError) {
                    _ = try SIPParser.parse(datagram: transaction.bytes)
                } catch {
                    preconditionFailure(
                        "the agent sent a request that does not parse (\(error)): \(String(decoding: transaction.bytes, as: UTF8.self).debugDescription)"
                    )
                }
            }
        }
        if tracing {
            let state = onLoop {
                (agent.registration.binding.state, agent.clients.transactions.count, agent.servers.transactions.count)
            }
            print(
                "\(String(decoding: step.prefix(24), as: UTF8.self).debugDescription) → registration \(state.0), clients \(state.1), servers \(state.2)"
            )
        }
    }
    return 0
}

/// Forgets every transaction, message and registration, as a new agent would start.
private func reset() {
    for (_, transaction) in agent.clients.transactions { for timer in transaction.timers.values { timer.cancel() } }
    for (_, transaction) in agent.servers.transactions { transaction.timer?.cancel() }
    for (_, message) in agent.inbox.incoming { message.deadline?.cancel() }
    agent.registration.binding.timer?.cancel()
    agent.clients.transactions = [:]
    agent.servers.transactions = [:]
    agent.inbox.incoming = [:]
    agent.inbox.waiting = [:]
    agent.inbox.answered = [:]
    agent.inbox.answeredOrder = []
    agent.requests.challenges = [:]
    agent.registration.binding = RegistrationState()
    lastSettleToken = 0
}

private func run(_ step: [UInt8]) {
    switch step {
    case Array("!r".utf8): agent.registration.register()
    case Array("!u".utf8): _ = agent.registration.unregister()
    case Array("!a".utf8): agent.settled(token: lastSettleToken, outcome: .ok)
    case Array("!x".utf8): agent.settled(token: lastSettleToken, outcome: .reject)
    case Array("!y".utf8): agent.settled(token: lastSettleToken, outcome: .retry)
    case let command where command.starts(with: Array("!m".utf8)):
        let envelope = Envelope(type: SIPEnvelopes.sendType, source: "fuzz.out", body: Array(command.dropFirst(2)))
        let delivery = Delivery(id: 1, context: agent.context)
        guard let outgoing = try? SIPEnvelopes.outgoing(for: envelope, configuration: agent.configuration) else { return }
        agent.send(outgoing, delivery: delivery)
    case Array("!e".utf8):
        for branch in agent.clients.transactions.keys.sorted() {
            for timer in [SIPTimer.e, .f, .k] { agent.clients.handle(.timer(timer), branch: branch) }
        }
    default:
        let datagram = substituted(step)
        do throws(SIPParseError) {
            agent.transport(received: try SIPParser.parse(datagram: datagram), from: peer)
        } catch {
            agent.transport(malformed: datagram, error: error, from: peer)
        }
    }
}

/// The datagram with `$B`, `$C` and `$I` replaced by the REGISTER transaction's branch, CSeq
/// number and Call-ID, and `$b`, `$c`, `$i` by the MESSAGE transaction's.
private func substituted(_ datagram: [UInt8]) -> [UInt8] {
    guard datagram.contains(UInt8(ascii: "$")) else { return datagram }
    var text = String(decoding: datagram, as: UTF8.self)
    for (letters, isRegister) in [(("$B", "$C", "$I"), true), (("$b", "$c", "$i"), false)] {
        let transactions = agent.clients.transactions.filter { ($0.value.cseq?.method == "REGISTER") == isRegister }
        guard let (branch, transaction) = transactions.max(by: { ($0.value.cseq?.number ?? 0) < ($1.value.cseq?.number ?? 0) })
        else { continue }
        let callID = (try? SIPParser.parse(datagram: transaction.bytes))?.headers["Call-ID"] ?? ""
        text = text.replacingOccurrences(of: letters.0, with: branch)
            .replacingOccurrences(of: letters.1, with: "\(transaction.cseq?.number ?? 0)")
            .replacingOccurrences(of: letters.2, with: callID)
    }
    return Array(text.utf8)
}

/// Runs `body` on the agent's event loop and waits for it.
@discardableResult
private func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    must { try agent.eventLoop.submit(body).wait() }
}

/// The value, or a trap naming the error: set-up that cannot fail unless the harness is wrong.
private func must<T>(_ body: () throws -> T?) -> T {
    do {
        guard let value = try body() else { fatalError("fuzz harness: no value") }
        return value
    } catch {
        fatalError("fuzz harness: \(error)")
    }
}
