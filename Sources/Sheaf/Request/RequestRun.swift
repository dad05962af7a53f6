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
/// deadline) and the same window of its origin (`OriginPace`: it waits its turn behind the
/// client's lists there, and a Retry-After or rate-limit headers it gets hold them back too),
/// and its outcome kept. A download streams its body to a file (`FileDownload`).
public final class RequestRun: Sendable {
    private struct State {
        var fetch: Fetch?
        var started = false
        var response: Response?
        var error: SheafError?
        var finished = false
        /// `whenFinished` bodies given before the outcome.
        var finishHandlers: [@Sendable () -> Void] = []
    }

    private let client: SheafClient
    private let url: String
    private let template: FetchTemplate
    private let state = Locked(State())
    private let requests = RequestCounters()
    private let download: FileDownload?

    /// - Parameter downloadingTo: a file the body is written to instead of memory.
    /// - Throws: `.invalidArgument` for a request that cannot be sent as written (see
    ///   `Request.validated`), a path that does not make a URL, or a destination that is a
    ///   directory; `.io` when the destination's folder or the download's temporary file cannot be created.
    init(client: SheafClient, request: Request, downloadingTo destination: String? = nil) throws(SheafError) {
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
        download = try destination.map { (path) throws(SheafError) in try FileDownload(destination: path) }
        template.download = download
        self.template = template
    }

    /// A download's (bytes written, bytes expected or -1); (0, -1) for other requests.
    public var progress: (done: Int64, expected: Int64) { download?.progress ?? (0, -1) }

    /// Sends the request; `whenFinished` and `wait` tell when it has an outcome.
    /// - Throws: `.state` when started before.
    public func start() throws(SheafError) {
        // Through the origin's window, as the client's lists there: one budget for all of them.
        let fetch = Fetch(client: client, url: url, template: template, requests: requests, pace: client.pace(for: url),
                          sizesWindow: false) { [self] result in
            finish(result)
        }
        try state.withLock { (state) throws(SheafError) in
            guard !state.started else { throw SheafError(.state, "a request is sent once; create a new one to send it again") }
            state.started = true
            state.fetch = fetch
        }
        fetch.start()
    }

    /// Blocks until the request has an outcome: the response (whatever its status), or the error.
    /// An HTTP status outside 2xx is both: the response, and an `.http` error carrying the
    /// server's error fields.
    /// - Throws: `.reentrant` from inside a Sheaf callback, `.state` before `start()`.
    public func wait() throws(SheafError) -> (response: Response?, error: SheafError?) {
        guard !CallbackContext.isInsideCallback else {
            throw SheafError.blockingCallInsideCallback
        }
        guard state.withLock({ $0.started }) else { throw SheafError(.state, "the request has not been sent") }
        return state.withLock(when: \.finished, timeoutMilliseconds: nil) { state, _ in (state.response, state.error) }
    }

    /// Runs `body` once the request has an outcome (on a global queue).
    public func whenFinished(_ body: @escaping @Sendable () -> Void) {
        let finished = state.withLock { state in
            if !state.finished { state.finishHandlers.append(body) }
            return state.finished
        }
        if finished { DispatchQueue.global().async(execute: body) }
    }

    /// Abandons the request: the outcome becomes `.cancelled` unless it was already decided.
    public func cancel() {
        let fetch = state.withLock { $0.fetch }
        fetch?.cancel()
        finish(.failed(SheafError(.cancelled, "the request was cancelled")))
    }

    /// The response and error once finished; nil, nil before.
    public var outcome: (response: Response?, error: SheafError?) {
        state.withLock { $0.finished ? ($0.response, $0.error) : (nil, nil) }
    }

    private func finish(_ end: FetchEnd) {
        var response: Response?
        var error: SheafError?
        switch end {
        case .fetched(let fetched):
            let answer = fetched.response
            var body = answer.body
            if !(200...299).contains(answer.status) {
                error = HTTPFailure.error(for: answer, url: fetched.url, attempts: fetched.attempts, redactor: client.redactor)
            } else if let download {
                error = saved(answer, to: download)
                body = []
            }
            response = Response(url: client.redactor.redact(fetched.url), status: answer.status, headers: answer.headers,
                                body: body, attempts: fetched.attempts)
        case .failed(let failure):
            // A write that failed aborted the transfer: the file's error says why.
            error = client.redacting(download?.writeFailure ?? failure)
        case .outOfBudget:
            // A single request has no request budget: its counters never refuse one.
            error = SheafError(.internal, "a single request ran out of a request budget it does not have")
        }
        if error != nil { download?.abandon() }
        let handlers = state.withLock { state -> [@Sendable () -> Void]? in
            guard state.started, !state.finished else { return nil }
            state.finished = true
            state.fetch = nil
            state.response = response
            state.error = error
            defer { state.finishHandlers = [] }
            return state.finishHandlers
        }
        guard let handlers else { return }
        state.changed()
        handlers.forEach { DispatchQueue.global().async(execute: $0) }
    }
}

/// Completes a download from a successful answer: its body, when the transport delivered it
/// rather than streaming it, is written first. Returns the error, if any.
private func saved(_ answer: HTTPResponse, to download: FileDownload) -> SheafError? {
    if !answer.bodyStreamed, download.begin(status: answer.status, headers: answer.headers) {
        let written = answer.body.withUnsafeBytes { download.write($0) }
        if !written { return download.writeFailure }
    }
    do {
        try download.complete()
        return nil
    } catch {
        return error
    }
}

extension SheafClient {
    /// A single request, not yet sent: call `start()` on it.
    /// - Throws: `.invalidArgument` for a request that cannot be sent as written.
    public func makeRequest(_ request: Request, downloadingTo destination: String? = nil) throws(SheafError) -> RequestRun {
        try RequestRun(client: self, request: request, downloadingTo: destination)
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
