import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request and its answer, bounded in time: the tests' HTTP client.
enum HTTPExchange {
    struct Answer {
        var status: Int
        var body: String
        var headers: [String: String]

        /// The body as a JSON object (empty when it is not one).
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
    }

    static func send(
        _ url: String, method: String = "GET", headers: [String: String] = [:], body: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Answer {
        var request = URLRequest(url: try #require(URL(string: url), sourceLocation: sourceLocation), timeoutInterval: 10)
        request.httpMethod = method
        // One connection per exchange: a kept-alive connection left idle past the server's
        // `header_timeout` (a polling test starved by a loaded machine) is answered 408 by its
        // connection guard, and URLSession would read that answer as this request's.
        request.setValue("close", forHTTPHeaderField: "Connection")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body { request.httpBody = Data(body.utf8) }
        let done = DispatchSemaphore(value: 0)
        let box = AnswerBox()
        URLSession.shared.dataTask(with: request) { data, response, error in
            let http = response as? HTTPURLResponse
            var fields: [String: String] = [:]
            for (name, value) in http?.allHeaderFields ?? [:] {
                if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
            }
            box.set(
                Answer(
                    status: http?.statusCode ?? -1,
                    body: data.map { String(decoding: $0, as: UTF8.self) } ?? "\(error.map { "\($0)" } ?? "")",
                    headers: fields))
            done.signal()
        }.resume()
        #expect(done.wait(timeout: .now() + 15) == .success, "no answer from \(url)", sourceLocation: sourceLocation)
        return box.value
    }

    private final class AnswerBox: @unchecked Sendable {
        // Written once by the session's callback before the semaphore is signalled.
        private(set) var value = Answer(status: -1, body: "", headers: [:])
        func set(_ answer: Answer) { value = answer }
    }
}
