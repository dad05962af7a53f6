/// What one attempt is worth telling, given the answer and what the fetch decided to do with it:
/// its log records and its events. Pure, so each rule is tested by the report it returns.
struct AttemptReport {
    var records: [LogRecord] = []
    var events: [ClientEvent] = []

    /// - Parameters:
    ///   - url: the attempt's URL; it and a redirect's target are redacted by `redactor`.
    ///   - attempt: the attempts made at `url`, this one included (from 1).
    ///   - milliseconds: how long the attempt took.
    init(method: String, url: String, redactor: Redactor, attempt: Int, milliseconds: Int64,
         result: Result<HTTPResponse, TransportError>, decision: AnswerPolicy.Decision) {
        let url = redactor.redact(url)
        let status: Int
        let answer: String
        var bytes: Int64 = -1
        var failure: TransportError.Kind?
        var retryAfter: String?
        switch result {
        case .success(let response):
            status = response.status
            bytes = Int64(response.body.count)
            retryAfter = response.headers.first(named: "Retry-After")
            answer = "\(status) in \(milliseconds) ms, \(bytes) bytes"
        case .failure(let error):
            status = 0
            failure = error.kind
            answer = "\(error.kind) after \(milliseconds) ms"
        }
        let tries = attempt > 1 ? " (attempt \(attempt))" : ""
        records.append(LogRecord(level: .info, kind: .request, message: "\(method) \(url) -> \(answer)\(tries)",
                                 method: method, url: url, status: status, attempt: attempt,
                                 durationMilliseconds: milliseconds, bytes: bytes))
        func event(_ kind: ClientEvent.Kind, wait: Int64, _ message: String) {
            events.append(ClientEvent(kind: kind, method: method, url: url, status: status, transportError: failure,
                                      attempt: attempt, waitMilliseconds: wait, message: message))
        }
        let reason = status == 0 ? failure.map(\.description) ?? "failure" : "HTTP \(status)"

        switch decision {
        case .retry(let wait):
            let wait = Int64(wait)
            records.append(LogRecord(level: .info, kind: .retry,
                                     message: "\(method) \(url): \(reason), retrying in \(wait) ms",
                                     method: method, url: url, status: status, attempt: attempt, delayMilliseconds: wait))
            if status == 429 || (status == 503 && retryAfter != nil) || (status == 403 && (retryAfter != nil || wait == 0)) {
                // A 403 tried again at once is a spent quota: the origin's window holds it until the reset.
                let waiting = wait == 0 ? "waiting for the limit's reset" : "waiting \(wait) ms"
                event(.rateLimited, wait: wait, "\(url): rate limited (\(reason)); \(waiting)")
            }
            event(.retrying, wait: wait, "\(url): \(reason); attempt \(attempt + 1) in \(wait) ms")
        case .refreshCredential:
            records.append(LogRecord(level: .info, kind: .retry,
                                     message: "\(method) \(url): \(reason), asking the credential provider for a new credential",
                                     method: method, url: url, status: status, attempt: attempt, delayMilliseconds: 0))
        case .redirect(let target, let newMethod):
            records.append(LogRecord(level: .debug, kind: .redirect, message: "\(method) \(url): \(status) to \(newMethod) \(redactor.redact(target))",
                                     method: method, url: url, status: status, attempt: attempt))
        case .fail(let error) where error.code == .rateLimited:
            event(.rateLimited, wait: -1, error.message)
        case .fail, .deliver:
            // The last word on this request: tell what it means for the caller.
            let tries = attempt > 1 ? " after \(attempt) attempts" : ""
            switch (status, failure) {
            case (401, _), (403, _):
                event(.authenticationRefused, wait: -1, "\(url): the server refused the credential (\(reason))")
            case (429, _):
                event(.rateLimited, wait: -1, "\(url): rate limited (\(reason))\(tries); no attempt left")
            case (500...599, _), (0, .some(.timeout)):
                event(.serverUnavailable, wait: -1, "\(url): the server is unavailable (\(reason))\(tries)")
            case (0, .some(.connect)), (0, .some(.dns)):
                event(.offline, wait: -1, "\(url): the server cannot be reached (\(reason))\(tries)")
            default:
                break
            }
        }
    }
}

extension Hooks {
    /// Hands over an attempt's records (those at the hook's level) and events.
    /// A request waits for a spent rate limit's reset (`WindowLimiter.Permit.waitForReset`): an
    /// event, and a record at info (the command line's `-v`). `url` is redacted.
    func waitsForReset(method: String, url: String, attempt: Int, milliseconds: Int) {
        let message = "\(url): the rate limit is spent; waiting \(milliseconds) ms for its reset"
        log(.info) {
            LogRecord(level: .info, kind: .retry, message: "\(method) \(message)", method: method, url: url, status: 0,
                      attempt: attempt, delayMilliseconds: Int64(milliseconds))
        }
        guard let onEvent else { return }
        let event = ClientEvent(kind: .rateLimited, method: method, url: url, status: 0, transportError: nil,
                                attempt: attempt, waitMilliseconds: Int64(milliseconds), message: message)
        deliver { onEvent(event) }
    }

    func deliver(_ report: AttemptReport) {
        let records = report.records.filter { logs($0.level) }
        let events = onEvent == nil ? [] : report.events
        guard !records.isEmpty || !events.isEmpty else { return }
        let (onLog, onEvent) = (self.onLog, self.onEvent)
        deliver { [self] in
            for record in records where !isClosed { onLog?(record) }
            for event in events where !isClosed { onEvent?(event) }
        }
    }
}
