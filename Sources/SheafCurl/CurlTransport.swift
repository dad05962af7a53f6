import Dispatch
import Sheaf

/// The default transport: libcurl's multi interface, driven by one dedicated event thread.
///
/// All requests of one transport share a single multi handle, so connections (and DNS answers)
/// are reused across requests, and any number of requests can be in flight at once.
///
/// Threading: `send` and `cancel()` may be called from any thread, including from inside a
/// completion. A completion is called exactly once, on the transport's event thread and with no
/// lock held, unless the request was cancelled first; a completion must not block for long,
/// since it holds up every other transfer of the transport.
///
/// Cancelling: after `cancel()` returns, the completion is never called, unless it was already
/// running (then `cancel()` is a no-op, as it is after completion). The transfer is removed from
/// libcurl on the event thread shortly after.
///
/// Lifetime: when the last reference goes away, the event thread stops, requests still in flight
/// complete with `TransportError(.other, "transport closed")` (cancelled ones are dropped) and
/// every curl handle is freed. Dropping the last reference never waits for a completion, so it is
/// safe anywhere, including inside a completion on the event thread.
public final class CurlTransport: Transport {
    private let loop: CurlEventLoop

    /// Creates a transport with its own connection cache and event thread.
    ///
    /// - Parameters:
    ///   - maxConnections: Idle connections kept for reuse (CURLMOPT_MAXCONNECTS); at least 1.
    ///   - maxConnectionsPerHost: Open connections per host, 0 for no limit; requests beyond it
    ///     wait inside libcurl (their timeouts keep running).
    ///   - maxTotalConnections: Open connections in all, 0 for no limit.
    ///   - acceptEncoding: Offers every content encoding libcurl can decode (gzip, deflate, ...)
    ///     and delivers the decoded body; the Content-Encoding and Content-Length response headers
    ///     still describe the body as it was sent. Downloads (a request with a `sink`) neither
    ///     offer nor decode any: their file holds the bytes as served.
    public init(maxConnections: Int = 64, maxConnectionsPerHost: Int = 0,
                maxTotalConnections: Int = 0, acceptEncoding: Bool = true) {
        loop = CurlEventLoop(maxConnections: maxConnections,
                             maxConnectionsPerHost: maxConnectionsPerHost,
                             maxTotalConnections: maxTotalConnections,
                             acceptEncoding: acceptEncoding)
    }

    deinit {
        loop.close()
    }

    /// Loads and initialises libcurl (with its TLS library) on a background thread, once per
    /// process, so the first request does not wait the few milliseconds it takes; a request made
    /// meanwhile waits for it. Cheap to call again.
    public static func warmUp() {
        DispatchQueue.global(qos: .utility).async { _ = CurlGlobal.isReady }
    }

    /// Queues the request on the event thread and returns a handle that can abandon it.
    ///
    /// If libcurl could not be initialised, the completion is called at once, on the calling
    /// thread, with a `TransportError.Kind.other` failure.
    /// libcurl applies the timeouts (CURLOPT_TIMEOUT_MS, CURLOPT_CONNECTTIMEOUT_MS) itself.
    public var enforcesTimeouts: Bool { true }

    public func send(_ request: HTTPRequest,
                     completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void)
        -> any TransportTask {
        let transfer = CurlTransfer(request: request, completion: completion)
        loop.enqueue(transfer)
        return CurlTask(loop: loop, transfer: transfer)
    }
}
