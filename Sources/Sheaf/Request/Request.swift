/// One HTTP call of a client, as values: method, path, query, headers and body.
public struct Request: Sendable {
    /// What a request sends as its body.
    public enum Body: Sendable, Equatable {
        /// Bytes as given, with their content type.
        case bytes([UInt8], contentType: String)
        /// `application/x-www-form-urlencoded` from name-value pairs, in order.
        case form([FormField])
    }

    /// One name-value pair of a form or a query.
    public struct FormField: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The method token, e.g. "GET", "POST".
    public var method: String
    /// Joined to the base URL's path (see `SheafClient.url(forPath:)`); may carry a query.
    public var path: String
    /// Parameters appended to the URL's query, percent-encoded.
    public var query: [FormField] = []
    /// Headers added to the client's; one named like a client default replaces it.
    public var headers: [HTTPHeader] = []
    public var body: Body?
    /// Retry transient failures even though the method is not idempotent (POST, PATCH). Without
    /// it such a request is tried once, unless it carries an `Idempotency-Key` header.
    public var retriesUnsafeMethod = false

    public init(method: String = "GET", path: String) {
        self.method = method
        self.path = path
    }

    /// Appends `segment` to the path as one segment: every byte but RFC 3986's unreserved ones is
    /// percent-encoded, `/` and spaces included, and a segment that is exactly "." or ".." is
    /// sent as `%2E` or `%2E%2E` (dots are unreserved, but those two would be resolved as a step
    /// in the path: `users` + `..` reached the parent), so an id cannot reach another resource.
    /// A query or fragment the path carries stays after it: `items?force=1` + `42` is
    /// `items/42?force=1` (appended after the query, the id was a query value and the request
    /// went to the collection). A segment is never an authority: `https://` + `h` is `https:///h`.
    public mutating func appendSegment(_ segment: String) {
        let end = path.firstIndex { $0 == "?" || $0 == "#" } ?? path.endIndex
        var head = String(path[..<end])
        // Right after "https://" the segment would be the host: it gets a "/" of its own there
        // too (and the URL, with no host, is refused).
        if (!head.hasSuffix("/") && !head.isEmpty) || head.hasSuffix("://") { head += "/" }
        switch segment {
        case ".": head += "%2E"
        case "..": head += "%2E%2E"
        default: head += URLText.encodeQueryComponent(segment)
        }
        path = head + path[end...]
    }

    /// Methods whose repetition has the effect of one call (RFC 9110 §9.2.2), retried freely.
    static let idempotentMethods: Set<String> = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]

    /// Whether a transient failure may be retried.
    var isRetriable: Bool {
        retriesUnsafeMethod || Self.idempotentMethods.contains(method)
            || headers.first(named: "Idempotency-Key") != nil
    }

    /// The body's bytes and content type.
    var encodedBody: (bytes: [UInt8], contentType: String)? {
        switch body {
        case nil: nil
        case .bytes(let bytes, let contentType): (bytes, contentType)
        case .form(let fields):
            (Array(fields.map { URLText.encodeQueryComponent($0.name) + "=" + URLText.encodeQueryComponent($0.value) }
                .joined(separator: "&").utf8),
             "application/x-www-form-urlencoded")
        }
    }

    /// Checks the request as a server would receive it.
    /// - Throws: `.invalidArgument` for a method that is not a token, a header that is not a
    ///   valid field, a body on GET or HEAD, or a content type with control characters.
    func validated() throws(SheafError) -> Request {
        guard HeaderRules.isToken(method) else {
            throw SheafError(.invalidArgument, "\"\(method)\" is not an HTTP method (RFC 9110 token)")
        }
        for header in headers { _ = try HeaderRules.check(header) }
        if body != nil, method == "GET" || method == "HEAD" {
            throw SheafError(.invalidArgument, "a \(method) request has no body; use POST, PUT or PATCH")
        }
        if case .bytes(_, let contentType) = body {
            _ = try HeaderRules.check(HTTPHeader(name: "Content-Type", value: contentType))
        }
        return self
    }
}
