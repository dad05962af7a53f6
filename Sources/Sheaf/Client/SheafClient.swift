/// A base URL with its credentials, transport and policies; runs lists.
public final class SheafClient: Sendable {
    /// The absolute base URL list paths are resolved against.
    public let baseURL: String
    /// Limits and policies applied to every list.
    public let configuration: ClientConfiguration
    let transport: any Transport
    let origin: Origin
    private let bearerToken: String?

    /// - Parameters:
    ///   - baseURL: an absolute http or https URL.
    ///   - bearerToken: sent as `Authorization: Bearer …`, only to the base URL's origin.
    ///   - transport: performs the HTTP exchanges.
    /// - Throws: `.invalidArgument` for a base URL that is not absolute http(s), or a
    ///   configuration out of range.
    public init(baseURL: String, bearerToken: String? = nil, transport: any Transport,
                configuration: ClientConfiguration = ClientConfiguration()) throws(SheafError) {
        self.origin = try Self.checkedOrigin(baseURL: baseURL, bearerToken: bearerToken)
        self.baseURL = baseURL
        self.bearerToken = bearerToken
        self.redactor = Redactor([bearerToken].compactMap { $0 })
        self.transport = transport
        self.configuration = try configuration.validated()
    }

    /// Checks a base URL and token as `init` does, without a transport.
    /// - Throws: `.invalidArgument` for a base URL that is not absolute http(s), or a token with
    ///   control characters.
    public static func validate(baseURL: String, bearerToken: String?) throws(SheafError) {
        _ = try checkedOrigin(baseURL: baseURL, bearerToken: bearerToken)
    }

    private static func checkedOrigin(baseURL: String, bearerToken: String?) throws(SheafError) -> Origin {
        guard let origin = Origin(baseURL), URLText.resolve(baseURL, against: baseURL) != nil else {
            throw SheafError(.invalidArgument, "the base URL must be an absolute http or https URL with a port of 0 to 65535")
        }
        if URLText.hasUserInfo(baseURL) {
            // The URL is not repeated: it holds a password.
            throw SheafError(.invalidArgument, "the base URL must not carry user:password; set credentials with sheaf_client_set_auth")
        }
        if let bearerToken, bearerToken.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw SheafError(.invalidArgument, "the bearer token contains control characters")
        }
        return origin
    }

    /// Creates a run of `description`; call `start()` on it.
    /// - Parameters:
    ///   - keepsItems: keep the whole prefix for `ListRun.prefixJSON()` (off for pure streaming).
    ///   - onSnapshot: called once per snapshot on the run's own serial queue; return false to stop.
    public func makeList(_ description: ListDescription, keepsItems: Bool = true,
                         onSnapshot: (@Sendable (Snapshot) -> Bool)? = nil) throws(SheafError) -> ListRun {
        try ListRun(client: self, description: description, keepsItems: keepsItems, onSnapshot: onSnapshot)
    }

    /// A run whose snapshots are pushed into `queue` and count against the window until taken.
    package func makePulledList<Element>(_ description: ListDescription, keepsItems: Bool, into queue: SnapshotQueue<Element>,
                                         _ prepare: @escaping @Sendable (Snapshot) -> Element) throws(SheafError) -> ListRun {
        let run = try ListRun(client: self, description: description, keepsItems: keepsItems, acknowledgesSnapshots: true,
                              onSnapshot: { queue.push(prepare($0)) })
        queue.whenTaken({ [weak run] in run?.snapshotTaken() }, closed: { [weak run] in run?.stopTaking() })
        return run
    }

    /// Runs `description` to its end and returns every item as one JSON array. Blocks.
    /// - Returns: the items and the outcome; the items are those delivered even on failure.
    public func fetchAll(_ description: ListDescription) throws(SheafError) -> (json: [UInt8], outcome: ListOutcome) {
        let run = try makeList(description)
        try run.start()
        let outcome = try run.wait()
        return (run.prefixJSON(), outcome)
    }

    /// `error` with every credential removed, in any spelling (see `Redactor`).
    func redacting(_ error: SheafError) -> SheafError {
        redactor.redact(error)
    }

    /// The credentials to keep out of every message.
    let redactor: Redactor

    /// The request for `url`, with the token only when `url` shares the base URL's origin.
    func request(for url: String) throws(SheafError) -> HTTPRequest {
        guard let target = Origin(url) else {
            throw SheafError(.invalidArgument, "not an absolute http or https URL: \(url)", url: url)
        }
        guard target == origin else {
            // A later policy may follow such links without credentials; for now they are refused.
            throw SheafError(.crossOrigin, "\(url) is outside the base URL's origin \(origin); refusing to follow it", url: url)
        }
        var headers = [HTTPHeader(name: "Accept", value: "application/json"),
                       HTTPHeader(name: "User-Agent", value: "sheaf/\(SheafVersion.string)")]
        if let bearerToken { headers.append(HTTPHeader(name: "Authorization", value: "Bearer \(bearerToken)")) }
        return HTTPRequest(url: url, headers: headers,
                           timeoutMilliseconds: configuration.timeoutMilliseconds,
                           connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds,
                           maxBodyBytes: configuration.maxBodyBytes)
    }

    /// The first page's URL: the path resolved against the base URL, plus the list's query and
    /// its first-page parameters.
    func firstURL(of description: ListDescription) throws(SheafError) -> String {
        guard let resolved = URLText.resolve(description.path, against: baseURL) else {
            throw SheafError(.invalidArgument, "the path \"\(description.path)\" does not resolve to an http(s) URL")
        }
        guard var url = URLText.appendingQuery(resolved, description.query) else {
            throw SheafError(.invalidArgument, "cannot add the query to \(resolved)")
        }
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

/// The library's version.
public enum SheafVersion {
    public static let major = 0
    public static let minor = 3
    public static let patch = 0
    public static let string = "\(major).\(minor).\(patch)"
    public static let number = major * 10_000 + minor * 100 + patch
}
