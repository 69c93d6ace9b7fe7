import SIPCodec
import Testing

/// The non-INVITE transaction state machines against RFC 3261 §17.1.2 and §17.2.2.
@Suite struct SIPTransactionTests {
    @Test func udpRetransmitsDoublingToT2AndTimesOutAt64T1() {
        var transaction = SIPClientTransaction(reliable: false)
        #expect(transaction.start() == [.sendRequest, .schedule(.f, after: .seconds(32)), .schedule(.e, after: .milliseconds(500))])
        var intervals: [Duration] = []
        for _ in 0..<6 {
            let actions = transaction.handle(.timer(.e))
            #expect(actions.first == .sendRequest)
            if case .schedule(.e, let after) = actions.last { intervals.append(after) }
        }
        #expect(intervals == [.seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4), .seconds(4)])
        #expect(transaction.handle(.timer(.f)) == [.cancel(.e), .timedOut, .terminate])
        #expect(transaction.state == .terminated)
        #expect(transaction.handle(.timer(.e)).isEmpty, "a stale timer does nothing")
    }

    @Test func aProvisionalResponseMovesRetransmissionsToT2() {
        var transaction = SIPClientTransaction(reliable: false)
        _ = transaction.start()
        #expect(transaction.handle(.response(status: 100)) == [.deliver(status: 100)])
        #expect(transaction.state == .proceeding)
        #expect(transaction.handle(.timer(.e)) == [.sendRequest, .schedule(.e, after: .seconds(4))])
    }

    @Test func aFinalResponseOnUDPIsFollowedByTimerKAndRetransmissionsAreAbsorbed() {
        var transaction = SIPClientTransaction(reliable: false)
        _ = transaction.start()
        #expect(
            transaction.handle(.response(status: 200)) == [
                .cancel(.e), .cancel(.f), .deliver(status: 200), .schedule(.k, after: .seconds(5)),
            ])
        #expect(transaction.handle(.response(status: 200)).isEmpty, "the retransmitted 200 is absorbed")
        #expect(transaction.handle(.timer(.k)) == [.terminate])
    }

    @Test func reliableTransportsNeitherRetransmitNorWait() {
        var transaction = SIPClientTransaction(reliable: true)
        #expect(transaction.start() == [.sendRequest, .schedule(.f, after: .seconds(32))])
        #expect(transaction.handle(.response(status: 401)) == [.cancel(.e), .cancel(.f), .deliver(status: 401), .terminate])
        var failing = SIPClientTransaction(reliable: true)
        _ = failing.start()
        #expect(failing.handle(.transportError) == [.cancel(.e), .cancel(.f), .failed, .terminate])
    }

    @Test func configuredTimersAreUsed() {
        var transaction = SIPClientTransaction(
            timers: SIPTimers(t1: .milliseconds(100), t2: .milliseconds(300), t4: .seconds(1)), reliable: false)
        #expect(transaction.start() == [.sendRequest, .schedule(.f, after: .milliseconds(6400)), .schedule(.e, after: .milliseconds(100))])
        _ = transaction.handle(.timer(.e))
        #expect(transaction.handle(.timer(.e)) == [.sendRequest, .schedule(.e, after: .milliseconds(300))])
    }

    @Test func theServerSideAnswersRetransmissionsWithTheLastResponse() {
        var transaction = SIPServerTransaction(reliable: false)
        #expect(transaction.retransmission().isEmpty, "nothing to resend before the user answered")
        #expect(transaction.respond(status: 200) == [.sendResponse(status: 200), .schedule(.j, after: .seconds(32))])
        #expect(transaction.retransmission() == [.sendResponse(status: 200)])
        #expect(transaction.respond(status: 500).isEmpty, "one final response only")
        #expect(transaction.timerJ() == [.terminate])
        #expect(transaction.retransmission().isEmpty)
        var reliable = SIPServerTransaction(reliable: true)
        #expect(reliable.respond(status: 202) == [.sendResponse(status: 202), .terminate])
    }
}
