import Foundation
import Synchronization
@testable import Sheaf

/// An in-memory `Transport` whose answers are scripted per URL.
///
/// A handler is looked up by the request's whole URL first, then by the URL without its query
/// (so one handler can serve every page of a list), then the fallback. It gets the request and
/// how many times that exact URL has been asked for (1 on the first request), and returns a
/// `ScriptedReply`: answered inside `send`, or after a delay from another thread, or never.
///
/// Every request is recorded with its headers; the transport also counts the requests
/// outstanding (sent, neither answered nor cancelled) and remembers the most there ever were.
final class ScriptedTransport: Transport {
    typealias Handler = @Sendable (_ request: HTTPRequest, _ attempt: Int) -> ScriptedReply

    private struct State {
        var handlers: [String: Handler] = [:]
        var fallback: Handler?
        var requests: [HTTPRequest] = []
        var attempts: [String: Int] = [:]
        var outstanding = 0
        var maxOutstanding = 0
        var cancelled = 0
    }

    private let state = Mutex(State())
    /// Added to every reply that does not set its own delay.
    let defaultDelayMilliseconds: Int

    init(delayMilliseconds: Int = 0) {
        defaultDelayMilliseconds = delayMilliseconds
    }

    /// Answers requests for `url` (exact, or every query of that URL when it has none).
    func on(_ url: String, _ handler: @escaping Handler) {
        state.withLock { $0.handlers[url] = handler }
    }

    /// Answers requests no other handler takes.
    func otherwise(_ handler: @escaping Handler) {
        state.withLock { $0.fallback = handler }
    }

    /// Every request sent, in order.
    var requests: [HTTPRequest] { state.withLock { $0.requests } }
    /// The requests sent to exactly `url`.
    func requestCount(_ url: String) -> Int { state.withLock { $0.attempts[url] ?? 0 } }
    /// The most requests ever outstanding at once.
    var maxOutstanding: Int { state.withLock { $0.maxOutstanding } }
    /// Requests sent and neither answered nor cancelled.
    var outstanding: Int { state.withLock { $0.outstanding } }
    /// Requests the core abandoned before they were answered.
    var cancelledCount: Int { state.withLock { $0.cancelled } }

    func send(_ request: HTTPRequest,
              completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any TransportTask {
        let (handler, attempt) = state.withLock { state -> (Handler?, Int) in
            state.requests.append(request)
            state.attempts[request.url, default: 0] += 1
            state.outstanding += 1
            state.maxOutstanding = max(state.maxOutstanding, state.outstanding)
            let withoutQuery = String(request.url.prefix { $0 != "?" })
            return (state.handlers[request.url] ?? state.handlers[withoutQuery] ?? state.fallback,
                    state.attempts[request.url]!)
        }
        let reply = handler?(request, attempt)
            ?? .status(599, body: "no handler for \(request.url)")
        let task = ScriptedTask(transport: self)
        guard let result = reply.result else { return task } // never answers
        let answer: @Sendable () -> Void = { [self] in
            // The count drops before the completion runs: the core may send the next request
            // from inside it, and that one must not be counted as overlapping this one.
            guard task.claim() else { return }
            state.withLock { $0.outstanding -= 1 }
            completion(result)
        }
        let delay = reply.delayMilliseconds ?? defaultDelayMilliseconds
        if delay <= 0 && !reply.answersOnAnotherThread {
            answer()
        } else {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(max(delay, 0)), execute: answer)
        }
        return task
    }

    /// How long a cancel takes before the transport has seen it (a transport that cancels on a
    /// thread of its own: libcurl's multi loop).
    let cancelMilliseconds = Atomic<Int>(0)

    fileprivate func taskCancelled() {
        let milliseconds = cancelMilliseconds.load(ordering: .relaxed)
        if milliseconds > 0 { Thread.sleep(forTimeInterval: Double(milliseconds) / 1000) }
        state.withLock {
            $0.outstanding -= 1
            $0.cancelled += 1
        }
    }
}

/// One scripted request: answered or cancelled, whichever comes first.
private final class ScriptedTask: TransportTask {
    private let settled = Mutex(false)
    private let transport: ScriptedTransport

    init(transport: ScriptedTransport) {
        self.transport = transport
    }

    /// True for the first of answer and cancel.
    func claim() -> Bool {
        settled.withLock { settled in
            defer { settled = true }
            return !settled
        }
    }

    func cancel() {
        if claim() { transport.taskCancelled() }
    }
}

/// What a `ScriptedTransport` does with one request.
struct ScriptedReply: Sendable {
    /// nil: the request is never answered (until it is cancelled).
    var result: Result<HTTPResponse, TransportError>?
    /// nil: the transport's default delay.
    var delayMilliseconds: Int?
    /// Answer from another thread even without a delay.
    var answersOnAnotherThread = false

    static func json(_ text: String, status: Int = 200, headers: [HTTPHeader] = []) -> ScriptedReply {
        ScriptedReply(result: .success(HTTPResponse(
            status: status, headers: [HTTPHeader(name: "Content-Type", value: "application/json")] + headers,
            body: Array(text.utf8))))
    }

    static func status(_ status: Int, headers: [HTTPHeader] = [], body: String = "") -> ScriptedReply {
        ScriptedReply(result: .success(HTTPResponse(status: status, headers: headers, body: Array(body.utf8))))
    }

    static func redirect(_ status: Int = 302, to location: String) -> ScriptedReply {
        .status(status, headers: [HTTPHeader(name: "Location", value: location)])
    }

    static func failure(_ kind: TransportError.Kind, _ message: String = "") -> ScriptedReply {
        ScriptedReply(result: .failure(TransportError(kind, message)))
    }

    static let never = ScriptedReply(result: nil)

    /// The same reply, `milliseconds` later, from another thread.
    func after(_ milliseconds: Int) -> ScriptedReply {
        var reply = self
        reply.delayMilliseconds = milliseconds
        reply.answersOnAnotherThread = true
        return reply
    }
}
