/// Performs HTTP exchanges for the core.
///
/// `send` is called concurrently, up to a list's window at once. It must call `completion`
/// exactly once, from any thread, possibly before `send` returns. It must not block the caller
/// for the duration of the exchange: a transport built on blocking I/O runs it on threads of
/// its own (see `BlockingTransport`), never on Swift's cooperative pool.
public protocol Transport: Sendable {
    /// Starts one exchange and returns a handle that can abandon it.
    func send(_ request: HTTPRequest,
              completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any TransportTask

    /// Whether the transport itself fails a request after `HTTPRequest.timeoutMilliseconds`. When
    /// it does not (the default), the core gives up on the answer a little after the timeout.
    var enforcesTimeouts: Bool { get }
}

extension Transport {
    public var enforcesTimeouts: Bool { false }
}

/// An exchange in progress.
public protocol TransportTask: Sendable {
    /// Abandons the exchange. The transport may still call the completion (which the core
    /// ignores), or may never call it.
    func cancel()
}

/// A task that cannot be abandoned; for transports that answer at once.
public struct FinishedTransportTask: TransportTask {
    public init() {}
    public func cancel() {}
}
