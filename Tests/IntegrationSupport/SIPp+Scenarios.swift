import Foundation

/// The SIPp scenarios the SIP suites and the router's own (tracing, scripts) play against the
/// sip plugin.
extension SIPp {
    /// A MESSAGE from bob (a foreign domain, so Kamailio relays it without a challenge) to alice.
    static func uacScenario(transport: String = "[transport]", contentType: String = "text/plain", body: String = "hello from sipp")
        -> String
    {
        """
        <?xml version="1.0" encoding="ISO-8859-1" ?>
        <scenario name="message uac">
          <send retrans="500">
            <![CDATA[
        MESSAGE sip:alice@example.test SIP/2.0
        Via: SIP/2.0/\(transport) [local_ip]:[local_port];branch=[branch]
        From: "Bob" <sip:bob@peer.test>;tag=[call_number]
        To: <sip:alice@example.test>
        Call-ID: [call_id]
        CSeq: 1 MESSAGE
        Max-Forwards: 70
        X-Ticket: 42
        Content-Type: \(contentType)
        Content-Length: [len]

        \(body)
            ]]>
          </send>
          <recv response="200"/>
        </scenario>
        """
    }

    /// Answers one MESSAGE with 200, after `pause` milliseconds (the tries before are unanswered).
    static func uasScenario(pause: Int = 0) -> String {
        """
        <?xml version="1.0" encoding="ISO-8859-1" ?>
        <scenario name="message uas">
          <recv request="MESSAGE"/>
          \(pause > 0 ? "<pause milliseconds=\"\(pause)\"/>" : "")
          <send>
            <![CDATA[
        SIP/2.0 200 OK
        [last_Via:]
        [last_From:]
        [last_To:];tag=[pid]sipp[call_number]
        [last_Call-ID:]
        [last_CSeq:]
        Content-Length: 0

            ]]>
          </send>
        </scenario>
        """
    }
}
