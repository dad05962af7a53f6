/// A base URL with its credentials, headers, transport and policies; runs lists and requests.
///
/// Declared here, with what every stage reads of it (how a request is made for a URL, the
/// windows of its origins, what to redact); what it runs (lists, groups, pagers, requests) is
/// added in Client/, above the stages (`SheafClient+Lists.swift`).
public final class SheafClient: Sendable {
    /// The absolute base URL paths are joined to (see `url(forPath:query:)`).
    public let baseURL: String
    /// Limits and policies applied to every list and request.
    public let configuration: ClientConfiguration
    let transport: any Transport
    let origin: Origin
    private let credential: Credential?
    /// Makes the credential when it is needed, in place of `credential`.
    let credentialProvider: CredentialProvider?
    /// Sent with every request (a request's header of the same name replaces one).
    private let headers: [HTTPHeader]
    /// Where log records and events go; nil when no one listens.
    let hooks: Hooks?
    /// The windows of the origins the client sends to (see `pace(for:)`): its own, or those it
    /// was given (`sendsThroughWindows(_:)`).
    private let windows: Locked<OriginWindows>

    /// - Parameters:
    ///   - baseURL: an absolute http or https URL, without user:password.
    ///   - credential: sent only to the base URL's origin.
    ///   - headers: default headers of every request (checked: a name must be a token, a value
    ///     has no CR, LF or other control character).
    ///   - secretParameters: query parameters whose values messages hide, besides
    ///     `Redactor.secretParameters`.
    ///   - transport: performs the HTTP exchanges.
    ///   - hooks: the log and event hooks (the caller closes them).
    ///   - credentialProvider: makes the credential when needed (in place of `credential`).
    /// - Throws: `.invalidArgument` for a base URL that is not absolute http(s), a credential or
    ///   header that cannot be sent, or a configuration out of range.
    public init(baseURL: String, credential: Credential? = nil, headers: [HTTPHeader] = [],
                secretParameters: [String] = [], transport: any Transport,
                configuration: ClientConfiguration = ClientConfiguration(), hooks: Hooks? = nil,
                credentialProvider: CredentialProvider? = nil) throws(SheafError) {
        self.origin = try Self.checkedOrigin(baseURL: baseURL)
        self.baseURL = baseURL
        self.credential = try credential?.validated()
        var checked: [HTTPHeader] = []
        for header in headers { checked.append(try HeaderRules.check(header)) }
        self.headers = checked
        self.credentialProvider = credentialProvider
        let keyParameters = [credential?.queryParameter, credentialProvider?.queryParameter].compactMap { $0 }
        self.fixedRedactor = Redactor(credential?.secrets ?? [], parameters: Redactor.secretParameters + secretParameters + keyParameters)
        self.foreignSecretParameters = Set((secretParameters + keyParameters).map { $0.lowercased() })
        self.transport = transport
        self.configuration = try configuration.validated()
        self.hooks = hooks
        self.windows = Locked(OriginWindows(configuration: self.configuration, hooks: hooks))
    }

    /// A client sending `Authorization: Bearer <bearerToken>` (when given) to its origin.
    public convenience init(baseURL: String, bearerToken: String?, transport: any Transport,
                            configuration: ClientConfiguration = ClientConfiguration()) throws(SheafError) {
        try self.init(baseURL: baseURL, credential: bearerToken.map { .bearer($0) }, transport: transport,
                      configuration: configuration)
    }

    /// Stores GET answers and revalidates them (`ClientConfiguration.cache`).
    var cache: ResponseCache? { configuration.cache }

    /// Notes that `url`'s origin answered a list's page one with success.
    func noteAccepted(_ url: String) {
        pace(for: url).noteAnsweredPageOne()
    }

    /// The window of `url`'s origin, shared by every list, request and download the client runs
    /// there: made with the client's configuration when the first one starts, and kept with what
    /// it learns for the next (a URL with no origin gets a window of its own).
    func pace(for url: String) -> OriginPace {
        windows.withLock { $0 }.pace(for: url)
    }

    /// Whether a list at `url` may ask for a window of pages before its page one answers (see
    /// `RunStart.pagesAhead`): when the client sends a credential there (a token, a key, a
    /// provider, or an Authorization or Cookie header of its own), none can be missing; without
    /// one, only once that origin has answered a page one on this client. Otherwise a missing
    /// token would cost a window of refused requests where two do.
    func asksAhead(of url: String) -> Bool {
        guard let target = Origin(url) else { return false }
        let sendsCredential = credential != nil || credentialProvider != nil
            || headers.contains { HeaderRules.credentialHeaders.contains($0.name.lowercased()) }
        return (sendsCredential && target == origin) || windows.withLock { $0 }.hasAnsweredPageOne(target)
    }

    /// Makes this client send through `windows` instead of its own, for every list, request and
    /// download it starts from now on: a list with headers or a transport of its own runs on a
    /// client of its own, and still shares its client's budget at each origin. Call before the
    /// client starts anything.
    package func sendsThroughWindows(_ windows: OriginWindows) {
        self.windows.withLock { $0 = windows }
    }

    /// Checks a base URL and credential as `init` does, without a transport.
    /// - Throws: `.invalidArgument` for a base URL that is not absolute http(s), or a credential
    ///   that cannot be sent.
    public static func validate(baseURL: String, credential: Credential? = nil) throws(SheafError) {
        _ = try checkedOrigin(baseURL: baseURL)
        _ = try credential?.validated()
    }

    private static func checkedOrigin(baseURL: String) throws(SheafError) -> Origin {
        guard let origin = Origin(baseURL), URLText.resolve(baseURL, against: baseURL) != nil else {
            throw SheafError(.invalidArgument, "the base URL must be an absolute http or https URL with a port of 0 to 65535")
        }
        if URLText.hasUserInfo(baseURL) {
            // The URL is not repeated: it holds a password.
            throw SheafError(.invalidArgument, "the base URL must not carry user:password; set credentials with sheaf_client_set_auth")
        }
        return origin
    }

    /// `error` with every credential removed, in any spelling (see `Redactor`).
    func redacting(_ error: SheafError) -> SheafError {
        redactor.redact(error)
    }

    /// The credentials to keep out of every message: the fixed ones, and those a provider gave.
    var redactor: Redactor {
        credentialProvider?.redactor(adding: fixedRedactor) ?? fixedRedactor
    }
    private let fixedRedactor: Redactor
    /// Lower-cased names of the query parameters never sent to another origin: the API key's and
    /// those the client marks secret. (Not the built-in `Redactor.secretParameters`: a presigned
    /// URL elsewhere needs its own `signature`.)
    private let foreignSecretParameters: Set<String>

    /// Whether requests to `url` carry a credential that `credentialProvider` makes.
    func needsProvidedCredential(_ url: String) -> Bool {
        credentialProvider != nil && Origin(url) == origin
    }

    /// The request for `url` made of `template`: the client's headers, the template's (which
    /// replace any of the same name), and the credential when `url` shares the base URL's origin.
    /// Elsewhere the cross-origin policy decides: refused (the default), or sent without the
    /// credential, without any header that carries one, and without the API key's or the
    /// client's secret query parameters (a redirect's Location may echo them); never from https
    /// down to http. A URL with user information is refused, wherever it came from.
    func request(for url: String, _ template: FetchTemplate = FetchTemplate(),
                 credential provided: Credential? = nil) throws(SheafError) -> HTTPRequest {
        guard let target = Origin(url) else {
            throw SheafError(.invalidArgument, "not an absolute http or https URL: \(url)", url: url)
        }
        // As for the base URL: a transport would send user:password as a credential of its own,
        // beside (or, at another origin, in place of) the client's, and messages would show it.
        // The URL is not repeated: it holds a password.
        guard !URLText.hasUserInfo(url) else {
            throw SheafError(.invalidArgument, "a URL with user:password@ (a path, next link or redirect) is not sent; "
                             + "set credentials with sheaf_client_set_credential")
        }
        let sameOrigin = target == origin
        if !sameOrigin {
            guard configuration.crossOrigin == .followWithoutCredentials else {
                throw SheafError(.crossOrigin, "\(url) is outside the base URL's origin \(origin); refusing to follow it",
                                 url: url, hint: "SHEAF_OPT_CROSS_ORIGIN = 1 follows it without credentials")
            }
            guard !(origin.scheme == "https" && target.scheme == "http") else {
                throw SheafError(.crossOrigin, "\(url) leaves https for http; refusing to follow it", url: url)
            }
        }
        var headers = [HTTPHeader(name: "Accept", value: "application/json"),
                       HTTPHeader(name: "User-Agent", value: "sheaf/\(SheafVersion.string)")]
        for header in self.headers + template.headers { headers.replace(with: header) }
        var url = url
        var body = template.body
        if let page = template.page { (url, body) = try page.render(url) }
        if sameOrigin {
            try (provided ?? credential)?.apply(to: &headers, url: &url)
        } else {
            headers.removeAll { HeaderRules.credentialHeaders.contains($0.name.lowercased()) }
            guard let stripped = URLText.removingQuery(url, named: foreignSecretParameters) else {
                throw SheafError(.crossOrigin, "\(url): cannot take the secret query parameters out; refusing to follow it", url: url)
            }
            url = stripped
        }
        if let download = template.download { headers += download.resumeHeaders() }
        var request = HTTPRequest(method: template.method, url: url, headers: headers, body: body,
                                  timeoutMilliseconds: configuration.timeoutMilliseconds,
                                  connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds,
                                  maxBodyBytes: template.bodyCap(configuration), tls: configuration.tls)
        request.httpVersion = configuration.httpVersion
        request.mayResend = template.isRetriable
        if let download = template.download {
            // A large file takes as long as it takes: the timeout applies to a stalled transfer.
            request.sink = download
            request.stallTimeoutMilliseconds = request.timeoutMilliseconds
            request.timeoutMilliseconds = 0
        }
        return request
    }

    /// The URL of `path`: an absolute http(s) URL as it is; anything else joined to the base
    /// URL's path, with or without a leading "/" (`https://h/api` + `items` and `/items` are
    /// both `https://h/api/items`: to its users a base URL is a prefix), "." and ".." segments
    /// resolved, then `query` appended (percent-encoded). The base URL's own query comes first.
    /// A relative path never leaves the base URL's origin: `/http://h/x` is a path under it.
    public func url(forPath path: String, query: [(name: String, value: String)] = []) throws(SheafError) -> String {
        var reference = path
        var base = path
        if !Self.isAbsolute(path) {
            // Resolved against the base path as a directory, so "." and ".." work as in a file system.
            let (basePath, baseQuery) = Self.splitQuery(baseURL)
            let (ownPath, ownQuery) = Self.splitQuery(path)
            let queries = [baseQuery, ownQuery].compactMap { $0 }.filter { !$0.isEmpty }
            let query = queries.isEmpty ? "" : "?" + queries.joined(separator: "&")
            let segments = ownPath.drop { $0 == "/" }
            base = segments.isEmpty || basePath.hasSuffix("/") ? basePath : basePath + "/"
            // "./" first: a reference whose first segment holds a ":" is read as a scheme, so
            // "/http://h/x" (its "/" dropped) went to h, and "users:1" made no URL at all.
            reference = segments.isEmpty ? base + query : "./" + segments + query
        }
        guard let resolved = URLText.resolve(reference, against: base) else {
            throw SheafError(.invalidArgument, "the path \"\(path)\" does not make an http(s) URL with the base URL")
        }
        guard let url = URLText.appendingQuery(resolved, query) else {
            throw SheafError(.invalidArgument, "cannot add the query to \(resolved)")
        }
        return url
    }

    private static func isAbsolute(_ path: String) -> Bool {
        let lower = path.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// `url` cut before its query (the fragment dropped), and the query.
    private static func splitQuery(_ url: String) -> (String, String?) {
        let withoutFragment = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard let mark = withoutFragment.firstIndex(of: "?") else { return (String(withoutFragment), nil) }
        return (String(withoutFragment[..<mark]), String(withoutFragment[withoutFragment.index(after: mark)...]))
    }

    /// The URL a list of `description` starts from (a partition's: its own), before any since
    /// parameter, redacted: the list as messages, a sync state and `sheaf_list_url` name it.
    package func listURL(of description: ListDescription) throws(SheafError) -> String {
        if let partition = description.partition { return redactor.redact(partition.url) }
        return redactor.redact(try firstURL(of: description))
    }

    /// The first page's URL: the path joined to the base URL, plus the list's query and its
    /// first-page parameters.
    func firstURL(of description: ListDescription) throws(SheafError) -> String {
        var url = try self.url(forPath: description.path, query: description.query)
        // The paging parameters replace any of the same name in the path: never sent twice.
        var parameters: [(String, String)] = []
        if let parameter = description.paging.parameter, let first = description.paging.first {
            parameters.append((parameter, String(first)))
        }
        if let size = description.paging.size, let value = size.value { parameters.append((size.parameter, String(value))) }
        for (name, value) in parameters {
            guard let next = URLText.settingQuery(url, name, to: value) else {
                throw SheafError(.invalidArgument, "cannot set \(name) in \(url)")
            }
            url = next
        }
        return url
    }
}
