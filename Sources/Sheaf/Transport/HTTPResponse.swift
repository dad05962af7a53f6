/// One HTTP response as a transport delivers it.
public struct HTTPResponse: Sendable {
    /// The status code, e.g. 200.
    public var status: Int
    /// Response headers in the order received.
    public var headers: [HTTPHeader]
    /// The whole body; empty when it went to the request's sink.
    public var body: [UInt8]
    /// Whether the body went to the request's sink.
    public var bodyStreamed = false

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
