/// One HTTP request as the core hands it to a transport.
public struct HTTPRequest: Sendable {
    /// The method, e.g. "GET".
    public var method: String
    /// The absolute URL.
    public var url: String
    /// Request headers in the order they are sent.
    public var headers: [HTTPHeader]
    /// The body; empty for GET.
    public var body: [UInt8]
    /// Whole-request timeout in milliseconds; 0 means none.
    public var timeoutMilliseconds: Int
    /// Connect timeout in milliseconds; 0 means the transport's default.
    public var connectTimeoutMilliseconds: Int
    /// A body longer than this fails with `TransportError.Kind.tooLarge`.
    public var maxBodyBytes: Int

    public init(method: String = "GET", url: String, headers: [HTTPHeader] = [], body: [UInt8] = [],
                timeoutMilliseconds: Int = 0, connectTimeoutMilliseconds: Int = 0,
                maxBodyBytes: Int = 64 << 20) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.maxBodyBytes = maxBodyBytes
    }
}

/// One header line; names compare case-insensitively where the core looks them up.
public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

extension Array where Element == HTTPHeader {
    /// The first value of the header `name`, compared case-insensitively.
    public func first(named name: String) -> String? {
        let wanted = name.lowercased()
        return first { $0.name.lowercased() == wanted }?.value
    }
}
