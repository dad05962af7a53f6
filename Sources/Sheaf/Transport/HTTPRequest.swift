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
    /// How to verify the server and present the client (transports of their own may ignore it).
    public var tls: TLSSettings
    /// For a download: where a transport that streams may write a successful body (see
    /// `ResponseBodySink`); one that does not delivers the body, and the core writes it.
    public var sink: (any ResponseBodySink)?
    /// For a download, in place of the whole-request timeout: give up when no byte has arrived
    /// for this long (0: never).
    public var stallTimeoutMilliseconds = 0
    /// Which HTTP the transport speaks (transports of their own may ignore it).
    public var httpVersion = HTTPVersion.automatic
    /// Whether the transport may send the request again on its own, as libcurl does when a
    /// reused connection dies before any answer. False for the requests the library does not
    /// retry (POST, PATCH, ... without an opt-in): the server may have read and acted on it.
    public var mayResend = true

    public init(method: String = "GET", url: String, headers: [HTTPHeader] = [], body: [UInt8] = [],
                timeoutMilliseconds: Int = 0, connectTimeoutMilliseconds: Int = 0,
                maxBodyBytes: Int = 64 << 20, tls: TLSSettings = TLSSettings()) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.maxBodyBytes = maxBodyBytes
        self.tls = tls
    }
}

/// TLS files and verification of a client: nil paths mean the transport's defaults.
public struct TLSSettings: Sendable, Equatable {
    /// A PEM bundle of the certificate authorities to trust.
    public var caFile: String?
    /// A directory of hashed PEM certificates to trust.
    public var caDirectory: String?
    /// The client certificate (PEM) for mutual TLS.
    public var certificate: String?
    /// The client certificate's private key (PEM).
    public var privateKey: String?
    /// Skip verifying the server's certificate and host name (tests against self-signed servers).
    public var insecure = false

    public init(caFile: String? = nil, caDirectory: String? = nil, certificate: String? = nil,
                privateKey: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.caDirectory = caDirectory
        self.certificate = certificate
        self.privateKey = privateKey
        self.insecure = insecure
    }
}

/// Which HTTP a transport speaks to the server.
public enum HTTPVersion: Sendable, Equatable {
    /// HTTP/2 where TLS negotiates it (ALPN), HTTP/1.1 otherwise; concurrent requests to one
    /// origin wait for its first connection and share it when it multiplexes.
    case automatic
    /// HTTP/1.1 only: a connection per request in flight.
    case http1_1
    /// HTTP/2 from the first byte on cleartext connections too (h2c by prior knowledge), for
    /// servers known to speak it; over TLS as `automatic`.
    case http2PriorKnowledge
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

    /// Appends `header` in place of every header of the same name (compared case-insensitively).
    public mutating func replace(with header: HTTPHeader) {
        let name = header.name.lowercased()
        removeAll { $0.name.lowercased() == name }
        append(header)
    }
}
