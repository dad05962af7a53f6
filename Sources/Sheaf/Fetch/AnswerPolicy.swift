/// What a fetch does with one answer of the transport: deliver it, try again, follow a
/// redirect, or fail. Pure (the clock and the randomness of the backoff come in as values), so
/// every rule is tested by the decisions it returns, without threads or I/O; `Fetch` only
/// carries them out.
struct AnswerPolicy: Sendable {
    let retry: RetryPolicy
    let maxBodyBytes: Int
    let maxRedirects: Int
    let redactor: Redactor
    /// Whether transient failures are retried (not for a POST without opt-in: it may have
    /// taken effect).
    let isRetriable: Bool
    /// Whether a final answer outside 2xx is delivered rather than failed.
    let deliversFailures: Bool
    /// Whether a 401 asks the credential provider for a new credential (the request carried a
    /// provided credential, and no refresh was made for it yet).
    var refreshesCredential = false
    /// The longest wait for a spent rate limit (`ClientConfiguration.maxWaitMilliseconds`).
    let maxWaitMilliseconds: Int
    /// The GraphQL connection a page is of: a 2xx answer with `errors` is then no page.
    let graphQL: GraphQLConnection?

    enum Decision: Equatable {
        /// A 2xx answer within the body cap: the page.
        case deliver(HTTPResponse)
        /// A transient failure with attempts left: try again after this wait.
        case retry(afterMilliseconds: Int)
        /// A redirect within the redirect cap: the request to this URL with this method (the
        /// origin rules are checked when it is sent).
        case redirect(to: String, method: String)
        /// A 401 to a provided credential: the same request, once, with a new one. (Every case
        /// carries a value: a case without one would have valgrind see its tag read from bytes
        /// never written.)
        case refreshCredential(status: Int)
        case fail(SheafError)

        static func == (lhs: Decision, rhs: Decision) -> Bool {
            switch (lhs, rhs) {
            case (.deliver(let a), .deliver(let b)): a.status == b.status && a.body == b.body
            case (.retry(let a), .retry(let b)): a == b
            case (.redirect(let a, let m), .redirect(let b, let n)): a == b && m == n
            case (.refreshCredential(let a), .refreshCredential(let b)): a == b
            case (.fail(let a), .fail(let b)): a == b
            default: false
            }
        }
    }

    init(_ configuration: ClientConfiguration, redactor: Redactor, template: FetchTemplate = FetchTemplate()) {
        retry = configuration.retry
        maxBodyBytes = template.bodyCap(configuration)
        maxRedirects = configuration.maxRedirects
        self.redactor = redactor
        isRetriable = template.isRetriable
        deliversFailures = template.deliversFailures
        maxWaitMilliseconds = configuration.maxWaitMilliseconds
        graphQL = template.page?.graphQL
    }

    /// - Parameters:
    ///   - attempt: the attempts made at `url` so far, this one included (from 1).
    ///   - redirects: the redirects followed before reaching `url`.
    ///   - delay: the backoff's wait for a retry after `attempt` attempts, given a Retry-After
    ///     value (`RetryPolicy.delayMilliseconds` in use; a fixed function in tests).
    func decide(_ result: Result<HTTPResponse, TransportError>, url: String, method: String = "GET", attempt: Int,
                redirects: Int, delay: (_ attempt: Int, _ retryAfter: String?) -> Int) -> Decision {
        let response: HTTPResponse
        let mayRetry = isRetriable && attempt < retry.maxAttempts
        switch result {
        case .failure(let error):
            if error.kind == .tooLarge { return .fail(bodyTooLarge(url)) }
            if error.kind.isTransient, mayRetry { return .retry(afterMilliseconds: delay(attempt, nil)) }
            let tries = attempt > 1 ? " after \(attempt) attempts" : ""
            return .fail(SheafError(.transport, "\(url): \(error)\(tries)", url: url))
        case .success(let value):
            response = value
        }
        if response.body.count > maxBodyBytes { return .fail(bodyTooLarge(url)) }
        switch response.status {
        case 200...299:
            if let graphQL, let answer = GraphQLAnswer(response.body) {
                if answer.rateLimited {
                    if RateLimitHeaders.parse(response.headers)?.remaining == 0 { return spentLimit(response, url: url, mayRetry: mayRetry) }
                    if mayRetry { return .retry(afterMilliseconds: answer.throttleWait ?? delay(attempt, response.headers.first(named: "Retry-After"))) }
                    return .fail(SheafError(.rateLimited, "\(redactor.redact(url)): the GraphQL API is rate limited (\(redactor.redact(answer.first))) after \(attempt) attempts",
                                            url: redactor.redact(url)))
                }
                if !(graphQL.allowsPartial && answer.hasData) { return .fail(answer.error(url: url, redactor: redactor)) }
            }
            return .deliver(response)
        case 401 where refreshesCredential:
            return .refreshCredential(status: 401)
        case 403, 429:
            // A refusal that says the rate limit is spent (GitHub's primary limit: 403 or 429 with
            // X-RateLimit-Remaining: 0) is tried again once the limit resets, within the longest
            // wait: the origin's window holds the attempt until then, or finds it spent
            // (`WindowLimiter.take`). Never a refused credential.
            if RateLimitHeaders.parse(response.headers)?.remaining == 0 { return spentLimit(response, url: url, mayRetry: mayRetry) }
            // A secondary limit (GitHub's 403 with Retry-After) or a 429: backed off as a
            // transient failure, Retry-After first.
            if mayRetry, response.status == 429 || response.headers.first(named: "Retry-After") != nil {
                return .retry(afterMilliseconds: delay(attempt, response.headers.first(named: "Retry-After")))
            }
            if deliversFailures { return .deliver(response) }
            return .fail(HTTPFailure.error(for: response, url: url, attempts: attempt, redactor: redactor))
        case 301, 302, 303, 307, 308:
            guard let location = response.headers.first(named: "Location"),
                  let target = URLText.resolve(location, against: url) else {
                return .fail(HTTPFailure.error(for: response, url: url, attempts: 1, redactor: redactor))
            }
            guard redirects < maxRedirects else {
                return .fail(SheafError(.http, "\(url): more than \(maxRedirects) redirects", url: url,
                                        httpStatus: response.status))
            }
            // RFC 9110 §15.4: 303 means "GET the result"; after 301 and 302 user agents turn a POST
            // into a GET too. 307 and 308 repeat the request as it was.
            let becomesGET = (response.status == 303 && method != "HEAD")
                || ((response.status == 301 || response.status == 302) && method == "POST")
            return .redirect(to: target, method: becomesGET ? "GET" : method)
        case let status where RetryPolicy.isTransient(status: status) && mayRetry:
            return .retry(afterMilliseconds: delay(attempt, response.headers.first(named: "Retry-After")))
        case _ where deliversFailures:
            return .deliver(response)
        default:
            return .fail(HTTPFailure.error(for: response, url: url, attempts: attempt, redactor: redactor))
        }
    }

    /// An answer saying the rate limit is spent: tried again once it resets, within the longest
    /// wait (the origin's window holds the attempt until then, or finds it spent), or failed.
    private func spentLimit(_ response: HTTPResponse, url: String, mayRetry: Bool) -> Decision {
        if mayRetry { return .retry(afterMilliseconds: 0) }
        let limit = RateLimitHeaders.parse(response.headers)
        let resetsIn = min(limit?.resetSeconds ?? 1, Int(Int32.max) / 1000) * 1000
        return .fail(HTTPFailure.rateLimited(url, .init(resetsIn: resetsIn, limit: limit?.limit, resource: limit?.resource),
                                             maxWait: maxWaitMilliseconds, status: response.status < 300 ? nil : response.status,
                                             redactor: redactor))
    }

    private func bodyTooLarge(_ url: String) -> SheafError {
        SheafError(.bodyTooLarge, "\(url): the response body exceeds the cap of \(maxBodyBytes) bytes", url: url)
    }
}
