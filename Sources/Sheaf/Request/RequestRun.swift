import Dispatch

/// The answer to a single request.
public struct Response: Sendable {
    /// The URL that answered, after redirects.
    public var url: String
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Attempts made at the final URL (more than 1 after retries).
    public var attempts: Int
}

/// One single request of a client: sent once started, through the same fetch as a list's pages
/// (headers, credentials by origin, retries for idempotent methods, redirects, the library's
/// deadline), and its outcome kept.
public final class RequestRun: Sendable {
    private struct State {
        var fetch: Fetch?
        var started = false
        var response: Response?
        var error: SheafError?
        var finished = false
    }

    private let client: SheafClient
    private let url: String
    private let template: FetchTemplate
    private let state = Locked(State())
    private let done = DispatchGroup()
    private let requests = RequestCounters()

    /// - Throws: `.invalidArgument` for a request that cannot be sent as written (see
    ///   `Request.validated`) or a path that does not make a URL.
    init(client: SheafClient, request: Request) throws(SheafError) {
        let request = try request.validated()
        self.client = client
        url = try client.url(forPath: request.path, query: request.query.map { ($0.name, $0.value) })
        var template = FetchTemplate(method: request.method, headers: request.headers, isRetriable: request.isRetriable,
                                     deliversFailures: true)
        if let (bytes, contentType) = request.encodedBody {
            template.body = bytes
            if request.headers.first(named: "Content-Type") == nil {
                template.headers.append(HTTPHeader(name: "Content-Type", value: contentType))
            }
        }
        self.template = template
    }

    /// Sends the request; `whenFinished` and `wait` tell when it has an outcome.
    /// - Throws: `.state` when started before.
    public func start() throws(SheafError) {
        let fetch = Fetch(client: client, url: url, template: template, requests: requests) { [self] result in
            finish(result)
        }
        try state.withLock { (state) throws(SheafError) in
            guard !state.started else { throw SheafError(.state, "a request is sent once; create a new one to send it again") }
            state.started = true
            state.fetch = fetch
            done.enter()
        }
        fetch.start()
    }

    /// Blocks until the request has an outcome: the response (whatever its status), or the error.
    /// An HTTP status outside 2xx is both: the response, and an `.http` error carrying the
    /// server's error fields.
    /// - Throws: `.reentrant` from inside a Sheaf callback, `.state` before `start()`.
    public func wait() throws(SheafError) -> (response: Response?, error: SheafError?) {
        guard !CallbackContext.isInsideCallback else {
            throw SheafError(.reentrant, "a blocking Sheaf call was made from inside a Sheaf callback")
        }
        guard state.withLock({ $0.started }) else { throw SheafError(.state, "the request has not been sent") }
        done.wait()
        return state.withLock { ($0.response, $0.error) }
    }

    /// Runs `body` once the request has an outcome (on a global queue). Call it after `start()`.
    public func whenFinished(_ body: @escaping @Sendable () -> Void) {
        done.notify(queue: .global(), execute: body)
    }

    /// Abandons the request: the outcome becomes `.cancelled` unless it was already decided.
    public func cancel() {
        let fetch = state.withLock { $0.fetch }
        fetch?.cancel()
        finish(.failure(SheafError(.cancelled, "the request was cancelled")))
    }

    /// The response and error once finished; nil, nil before.
    public var outcome: (response: Response?, error: SheafError?) {
        state.withLock { $0.finished ? ($0.response, $0.error) : (nil, nil) }
    }

    private func finish(_ result: Result<Fetched, SheafError>) {
        var response: Response?
        var error: SheafError?
        switch result {
        case .success(let fetched):
            let answer = fetched.response
            response = Response(url: client.redactor.redact(fetched.url), status: answer.status, headers: answer.headers,
                                body: answer.body, attempts: fetched.attempts)
            if !(200...299).contains(answer.status) {
                error = HTTPFailure.error(for: answer, url: fetched.url, attempts: fetched.attempts, redactor: client.redactor)
            }
        case .failure(let failure):
            error = client.redacting(failure)
        }
        let first = state.withLock { state -> Bool in
            guard state.started, !state.finished else { return false }
            state.finished = true
            state.fetch = nil
            state.response = response
            state.error = error
            return true
        }
        if first { done.leave() }
    }
}

extension SheafClient {
    /// A single request, not yet sent: call `start()` on it.
    /// - Throws: `.invalidArgument` for a request that cannot be sent as written.
    public func makeRequest(_ request: Request) throws(SheafError) -> RequestRun {
        try RequestRun(client: self, request: request)
    }

    /// Sends `request` and waits for its outcome. Blocks.
    /// - Returns: the response, whatever its status.
    /// - Throws: `.invalidArgument` for a request that cannot be sent; the transport's failure
    ///   when there is no response.
    public func send(_ request: Request) throws(SheafError) -> Response {
        let run = try makeRequest(request)
        try run.start()
        let (response, error) = try run.wait()
        guard let response else { throw error ?? SheafError(.internal, "a request ended without an outcome") }
        return response
    }
}
