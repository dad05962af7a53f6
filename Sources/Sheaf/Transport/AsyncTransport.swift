/// A transport written with async/await, for Swift users' own backends (URLSession, AsyncHTTPClient,
/// a test double). `SheafClient(baseURL:..., transport: AsyncTransportAdapter(yours))` uses it: every
/// exchange runs in a task of its own, cancelled when the core abandons the exchange (a list
/// cancelled, a page past the end), and a failure that is not a `TransportError` is mapped by
/// the adapter's `mapError` (by default, `.other` with the error's description).
public protocol AsyncTransport: Sendable {
    /// Performs one exchange. Called concurrently, up to a list's window at once.
    /// - Throws: a `TransportError` when there is no HTTP status (a timeout, a refused
    ///   connection...); an HTTP failure status is a response, not an error.
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}

/// Makes an `AsyncTransport` a `Transport` of the core.
public struct AsyncTransportAdapter<Base: AsyncTransport>: Transport {
    public let base: Base
    /// Turns what `base` throws into a `TransportError` (the hook for a backend's own errors:
    /// URLError's timeouts as `.timeout`, say, so that they are retried).
    public let mapError: @Sendable (any Error) -> TransportError

    public init(_ base: Base, mapError: @escaping @Sendable (any Error) -> TransportError = AsyncTransportAdapter.defaultMapping) {
        self.base = base
        self.mapError = mapError
    }

    /// A `TransportError` as it is; anything else `.other`, with its description.
    public static func defaultMapping(_ error: any Error) -> TransportError {
        error as? TransportError ?? TransportError(.other, String(describing: error))
    }

    public func send(_ request: HTTPRequest,
                     completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any TransportTask {
        let base = base, mapError = mapError
        return TaskHandle(Task {
            do {
                completion(.success(try await base.send(request)))
            } catch {
                completion(.failure(mapError(error)))
            }
        })
    }

    private struct TaskHandle: TransportTask {
        let task: Task<Void, Never>
        init(_ task: Task<Void, Never>) { self.task = task }
        func cancel() { task.cancel() }
    }
}
