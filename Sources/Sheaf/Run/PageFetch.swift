import Synchronization
import Dispatch

/// Fetches one page: attempts, transient-failure retries with backoff, redirects, and the
/// credential rule (the token goes only to the base URL's origin; any other origin is refused).
final class PageFetch: Sendable {
    /// What a fetch produced: the final URL and response, or why there is none.
    typealias Completion = @Sendable (Result<(url: String, response: HTTPResponse), SheafError>) -> Void

    private struct State {
        var url: String
        var attempt = 0
        var redirects = 0
        var task: (any TransportTask)?
        var isDone = false
        /// Whether an attempt is at the transport, counted in `requests.inFlight`.
        var isOutstanding = false
    }

    private let client: SheafClient
    private let state: Mutex<State>
    private let completion: Completion
    private let requests: RequestCounters

    init(client: SheafClient, url: String, requests: RequestCounters, completion: @escaping Completion) {
        self.client = client
        self.requests = requests
        self.state = Mutex(State(url: url))
        self.completion = completion
    }

    func start() {
        attempt()
    }

    /// Abandons the fetch; the completion is not called afterwards.
    func cancel() {
        let task = state.withLock { state -> (any TransportTask)? in
            state.isDone = true
            settleOutstanding(&state)
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }

    private func attempt() {
        let url = state.withLock { state -> String? in
            guard !state.isDone else { return nil }
            state.attempt += 1
            return state.url
        }
        guard let url else { return }
        let request: HTTPRequest
        do {
            request = try client.request(for: url)
        } catch {
            return finish(.failure(error))
        }
        state.withLock { state in
            state.isOutstanding = true
            requests.started()
        }
        let task = client.transport.send(request) { [self] result in
            handle(result, url: url)
        }
        let abandoned = state.withLock { state -> Bool in
            if state.isDone { return true }
            state.task = task
            return false
        }
        if abandoned { task.cancel() }
    }

    private func handle(_ result: Result<HTTPResponse, TransportError>, url: String) {
        let attempt = state.withLock { state -> Int? in
            state.task = nil
            settleOutstanding(&state)
            return state.isDone ? nil : state.attempt
        }
        guard let attempt else { return }
        let retry = client.configuration.retry
        let response: HTTPResponse
        switch result {
        case .failure(let error):
            if error.kind == .tooLarge {
                return finish(.failure(bodyTooLarge(url)))
            }
            if error.kind.isTransient, attempt < retry.maxAttempts {
                return schedule(after: retry.delayMilliseconds(afterAttempt: attempt, retryAfter: nil))
            }
            let tries = attempt > 1 ? " after \(attempt) attempts" : ""
            return finish(.failure(SheafError(.transport, "\(url): \(error)\(tries)", url: url)))
        case .success(let value):
            response = value
        }
        if response.body.count > client.configuration.maxBodyBytes {
            return finish(.failure(bodyTooLarge(url)))
        }
        switch response.status {
        case 200...299:
            finish(.success((url, response)))
        case 301, 302, 303, 307, 308:
            follow(redirectFrom: url, response)
        case let status where RetryPolicy.isTransient(status: status) && attempt < retry.maxAttempts:
            schedule(after: retry.delayMilliseconds(afterAttempt: attempt,
                                                    retryAfter: response.headers.first(named: "Retry-After")))
        default:
            finish(.failure(HTTPFailure.error(for: response, url: url, attempts: attempt)))
        }
    }

    private func follow(redirectFrom url: String, _ response: HTTPResponse) {
        guard let location = response.headers.first(named: "Location"),
              let target = URLText.resolve(location, against: url) else {
            return finish(.failure(HTTPFailure.error(for: response, url: url, attempts: 1)))
        }
        let allowed = state.withLock { state -> Bool in
            state.redirects += 1
            state.url = target
            state.attempt = 0
            return state.redirects <= client.configuration.maxRedirects
        }
        guard allowed else {
            return finish(.failure(SheafError(.http, "\(url): more than \(client.configuration.maxRedirects) redirects",
                                              url: url, httpStatus: response.status)))
        }
        attempt()
    }

    /// The attempt at the transport is over (answered or abandoned): count it once.
    private func settleOutstanding(_ state: inout State) {
        if state.isOutstanding { requests.finished() }
        state.isOutstanding = false
    }

    private func schedule(after milliseconds: Int) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [self] in
            attempt()
        }
    }

    private func bodyTooLarge(_ url: String) -> SheafError {
        SheafError(.bodyTooLarge, "\(url): the response body exceeds the cap of \(client.configuration.maxBodyBytes) bytes", url: url)
    }

    private func finish(_ result: Result<(url: String, response: HTTPResponse), SheafError>) {
        let first = state.withLock { state -> Bool in
            defer { state.isDone = true }
            return !state.isDone
        }
        // A server or transport may echo the credential back; it must not reach a message.
        if first { completion(result.mapError(client.redacting)) }
    }
}
