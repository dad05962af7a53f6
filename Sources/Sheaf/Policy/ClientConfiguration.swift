/// What a client does with a URL outside its base URL's origin.
public enum CrossOriginPolicy: Sendable, Equatable {
    /// Fails with `.crossOrigin` (the default).
    case refuse
    /// Sends the request without the credential and without headers that carry one; never from
    /// https down to http.
    case followWithoutCredentials
}

/// Limits and policies of a client, applied to every list it runs.
public struct ClientConfiguration: Sendable, Equatable {
    /// Requests in flight at once to one origin (1...64), every list, request and download the
    /// client runs there together (`OriginPace`): where an adapting window starts, and the most pages a list asks
    /// for before its page one answers.
    public var window = 8
    /// Whether the window adapts to the server (grows while latency holds, shrinks on refusals
    /// and rising latency; see `WindowLimiter`) or stays at `window`.
    public var adaptsWindow = true
    /// The most requests an adapting window lets in flight to one origin (1...64).
    public var maxWindow = 64
    /// The most pages one list may fetch.
    public var maxPages = 10_000
    /// The largest response body accepted.
    public var maxBodyBytes = 64 << 20
    /// Retries of transient failures.
    public var retry = RetryPolicy()
    /// Whole-request timeout; 0 means none.
    public var timeoutMilliseconds = 30_000
    /// Connect timeout; 0 means the transport's default.
    public var connectTimeoutMilliseconds = 10_000
    /// Redirects followed per request.
    public var maxRedirects = 10
    /// What happens to a next link, redirect or absolute path at another origin.
    public var crossOrigin = CrossOriginPolicy.refuse
    /// Certificate authorities, client certificate, verification.
    public var tls = TLSSettings()
    /// Which HTTP to speak: HTTP/2 multiplexes a list's window over one connection.
    public var httpVersion = HTTPVersion.automatic
    /// The longest a list or request waits for a spent rate limit to reset (the server said, in
    /// `X-RateLimit-Remaining`/`-Reset` or `RateLimit`, that nothing is left): a limit that resets
    /// later fails the next request with `.rateLimited` before it is sent, and a list with it,
    /// keeping its prefix and a resume token. 0: never waited for.
    public var maxWaitMilliseconds = ClientConfiguration.defaultMaxWaitMilliseconds
    /// Stores the client's GET answers on disk and asks for each again with its validators, a
    /// 304 answering with the stored one (see `ResponseCache`); nil (the default): none.
    public var cache: ResponseCache?

    /// A minute: a limit of a minute's window (search APIs, secondary limits) is waited out; an
    /// hour's (GitHub's 5,000 points) is not, unless the caller says so.
    public static let defaultMaxWaitMilliseconds = 60_000

    /// The largest body cap accepted: 1 TiB.
    public static let bodyCapLimit = 1 << 40

    public init() {}

    /// Checks every value's range; the error names the first one out of range.
    public func validated() throws(SheafError) -> ClientConfiguration {
        func check(_ ok: Bool, _ what: String) throws(SheafError) {
            if !ok { throw SheafError(.invalidArgument, what) }
        }
        try check((1...64).contains(window), "the window must be between 1 and 64, not \(window)")
        try check((1...64).contains(maxWindow), "the window's maximum must be between 1 and 64, not \(maxWindow)")
        try check(maxPages >= 1, "the page cap must be at least 1, not \(maxPages)")
        try check((1...Self.bodyCapLimit).contains(maxBodyBytes), "the body cap must be between 1 byte and 1 TiB, not \(maxBodyBytes)")
        try check((1...100).contains(retry.maxAttempts), "attempts must be between 1 and 100, not \(retry.maxAttempts)")
        try check(retry.baseDelayMilliseconds >= 0, "the retry base must not be negative")
        try check(retry.maxDelayMilliseconds >= 0, "the retry cap must not be negative")
        try check(timeoutMilliseconds >= 0, "the timeout must not be negative")
        try check(connectTimeoutMilliseconds >= 0, "the connect timeout must not be negative")
        try check((0...50).contains(maxRedirects), "redirects must be between 0 and 50, not \(maxRedirects)")
        try check(maxWaitMilliseconds >= 0, "the longest wait for a rate limit must not be negative")
        return self
    }
}
