import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import Sheaf
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An `AsyncTransport` over AsyncHTTPClient's `HTTPClient`, so that a server shares its HTTP
/// client — connection pool, event loops, TLS configuration, proxy — with Sheaf:
///
/// ```swift
/// let transport = AsyncTransportAdapter(AsyncHTTPClientTransport(client: httpClient))
/// let client = try SheafClient(baseURL: base, transport: transport)
/// ```
///
/// Each request's whole timeout and body cap are honoured: the timeout covers the answer's head
/// (AsyncHTTPClient's deadline) and its body (bounded here), and a body over
/// `HTTPRequest.maxBodyBytes` fails as `TransportError.Kind.tooLarge` as soon as it is known to
/// be (from Content-Length, or as the bytes arrive). Cancelling the exchange (the core does, for
/// a cancelled list or a page past the end) cancels AsyncHTTPClient's request. Failures are
/// thrown as `TransportError`s of the kinds libcurl's would be (`mapError(_:)`), so retries
/// behave the same.
///
/// What the `HTTPClient`'s configuration decides, not the request: TLS (a request's
/// `TLSSettings` are ignored), the connect timeout, the HTTP version, redirects, connections per
/// host and whether a failed connection is tried again. `configuration(for:_:)` sets what Sheaf
/// needs on a configuration of the server's: with a client that follows redirects, Sheaf sees
/// only where one led (AsyncHTTPClient drops `Authorization` and cookies across origins, but not
/// an API-key header); with one that retries connections, a refused connection costs the whole
/// request timeout before Sheaf hears of it.
///
/// A download's body is delivered whole and written by the core (no streaming to the request's
/// sink); its stall timeout is enforced (no byte for that long, head or body, fails as
/// `.timeout`). Compressed answers: see `requestsCompression`.
public struct AsyncHTTPClientTransport: AsyncTransport {
    /// The client every exchange goes through. The caller owns it (and shuts it down).
    public let client: HTTPClient
    /// Whether requests ask for compressed answers (`Accept-Encoding: gzip, deflate`, unless a
    /// request names its own), as libcurl's transport does.
    public let requestsCompression: Bool

    /// - Parameters:
    ///   - client: the server's client; `configuration(for:_:)` says what Sheaf needs of it.
    ///   - requestsCompression: true only for a client that decompresses answers (its
    ///     configuration's `decompression` enabled, as `configuration(for:_:)` makes it):
    ///     AsyncHTTPClient does not ask for compression itself, nor decode what it did not ask
    ///     for, so a client without it would hand Sheaf compressed bytes.
    public init(client: HTTPClient = .shared, requestsCompression: Bool = false) {
        self.client = client
        self.requestsCompression = requestsCompression
    }

    public func send(_ request: Sheaf.HTTPRequest) async throws -> Sheaf.HTTPResponse {
        do {
            return try await exchange(request)
        } catch {
            throw Self.mapError(error)
        }
    }

    private func exchange(_ request: Sheaf.HTTPRequest) async throws -> Sheaf.HTTPResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for header in request.headers {
            outgoing.headers.add(name: header.name, value: header.value)
        }
        if requestsCompression, !outgoing.headers.contains(name: "Accept-Encoding") {
            outgoing.headers.add(name: "Accept-Encoding", value: "gzip, deflate")
        }
        if !request.body.isEmpty {
            outgoing.body = .bytes(ByteBuffer(bytes: request.body))
        }
        let timeout = request.timeoutMilliseconds > 0 ? Duration.milliseconds(request.timeoutMilliseconds) : nil
        let stall = request.stallTimeoutMilliseconds > 0 ? Duration.milliseconds(request.stallTimeoutMilliseconds) : nil
        let deadline = timeout.map { ContinuousClock.now + $0 }
        // AsyncHTTPClient's deadline covers the wait for the head: the whole timeout, or with
        // none (a download) the stall timeout, no byte having come before the head.
        let headMilliseconds = request.timeoutMilliseconds > 0 ? request.timeoutMilliseconds : request.stallTimeoutMilliseconds
        let nioDeadline: NIODeadline = headMilliseconds > 0 ? .now() + .milliseconds(Int64(headMilliseconds)) : .distantFuture
        let response = try await client.execute(outgoing, deadline: nioDeadline)

        let limit = request.maxBodyBytes
        // A HEAD answer's Content-Length is the body it did not send; a compressed one's says
        // nothing of the decoded size, which the cap is about.
        if request.method != "HEAD", !response.headers.contains(name: "Content-Encoding"),
           let length = response.headers.first(name: "Content-Length").flatMap({ Int($0) }), length > limit {
            throw TransportError(.tooLarge, "response body of \(length) bytes exceeds \(limit) bytes")
        }
        let body = try await Self.collect(response.body, limit: limit, deadline: deadline, stall: stall,
                                          timeoutMilliseconds: request.timeoutMilliseconds,
                                          stallMilliseconds: request.stallTimeoutMilliseconds)
        var headers: [HTTPHeader] = []
        headers.reserveCapacity(response.headers.count)
        for (name, value) in response.headers {
            headers.append(HTTPHeader(name: name, value: value))
        }
        return Sheaf.HTTPResponse(status: Int(response.status.code), headers: headers, body: body)
    }

    /// The body's bytes, at most `limit` of them, before `deadline` and with no pause longer
    /// than `stall` between two chunks.
    private static func collect(_ body: HTTPClientResponse.Body, limit: Int, deadline: ContinuousClock.Instant?,
                                stall: Duration?, timeoutMilliseconds: Int, stallMilliseconds: Int) async throws -> [UInt8] {
        guard deadline != nil || stall != nil else { return try await read(body, limit: limit, progress: nil) }
        let progress = Progress()
        return try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask { try await read(body, limit: limit, progress: progress) }
            // The watchdog: returns (nil) when the deadline passes or the body stalls.
            group.addTask {
                while true {
                    let now = ContinuousClock.now
                    var wake = deadline ?? now + .seconds(3600)
                    if let deadline, deadline <= now { return nil }
                    if let stall {
                        let stalledAt = progress.last + stall
                        if stalledAt <= now { return nil }
                        wake = min(wake, stalledAt)
                    }
                    try await Task.sleep(until: wake, clock: .continuous)
                }
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let bytes = first else {
                if let deadline, deadline <= ContinuousClock.now {
                    throw TransportError(.timeout, "no whole answer within \(timeoutMilliseconds) ms")
                }
                throw TransportError(.timeout, "no byte of the answer for \(stallMilliseconds) ms")
            }
            return bytes
        }
    }

    /// When the last chunk of a body arrived.
    private final class Progress: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var last: ContinuousClock.Instant { instant.withLock { $0 } }
        func note() { instant.withLock { $0 = .now } }
    }

    private static func read(_ body: HTTPClientResponse.Body, limit: Int, progress: Progress?) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in body {
            progress?.note()
            guard chunk.readableBytes <= limit - bytes.count else {
                // Leaving the loop cancels the rest of the request.
                throw TransportError(.tooLarge, "response body exceeds \(limit) bytes")
            }
            bytes.append(contentsOf: chunk.readableBytesView)
        }
        return bytes
    }

    /// `base` with what Sheaf needs of a client it shares: answers decompressed (up to
    /// `maxBodyBytes` decoded; pass `requestsCompression: true` to the transport to ask for
    /// them), redirects left to Sheaf (it follows
    /// them itself, with its rules for where a credential may go), a refused or failed connection
    /// reported at once (Sheaf retries it with its own backoff and counts the attempt, where
    /// AsyncHTTPClient would try again silently until the request's deadline), connections per
    /// host for the largest window (`maxWindow`; AsyncHTTPClient's default of 8 would queue the
    /// rest of a window in its pool), and `configuration`'s connect timeout. Everything else of
    /// `base` (TLS, proxy, idle timeout, HTTP version...) is kept.
    public static func configuration(for configuration: ClientConfiguration = ClientConfiguration(),
                                     _ base: HTTPClient.Configuration = HTTPClient.Configuration()) -> HTTPClient.Configuration {
        var made = base
        made.redirectConfiguration = .disallow
        made.decompression = .enabled(limit: .size(configuration.maxBodyBytes))
        made.connectionPool.retryConnectionEstablishment = false
        made.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(
            made.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit, configuration.maxWindow)
        if configuration.connectTimeoutMilliseconds > 0 {
            made.timeout.connect = .milliseconds(Int64(configuration.connectTimeoutMilliseconds))
        }
        return made
    }

    /// A failure as the `TransportError` libcurl's transport would give for it:
    ///
    /// - `.timeout`: AsyncHTTPClient's deadline, connect, read, write and TLS handshake
    ///   timeouts, no connection from the pool in time, NIO's connect timeout, `ETIMEDOUT`.
    /// - `.connect`: a connection refused, reset or closed before the answer was whole (as
    ///   libcurl's "couldn't connect", "recv failure", "got nothing" and "partial file"), a host
    ///   unreachable.
    /// - `.dns`: a name that did not resolve.
    /// - `.tls`: a handshake or certificate failure (NIOSSL's errors).
    /// - `.tooLarge`: more decompressed bytes than the client's decompression limit.
    /// - `.other`: the rest (cancellation among them), with the error's description.
    ///
    /// A `TransportError` is kept as it is.
    public static func mapError(_ error: any Error) -> TransportError {
        if let error = error as? TransportError { return error }
        return TransportError(kind(of: error), String(describing: error))
    }

    static func kind(of error: any Error) -> TransportError.Kind {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .connectTimeout, .readTimeout, .writeTimeout, .tlsHandshakeTimeout,
                 .getConnectionFromPoolTimeout, .socksHandshakeTimeout, .httpProxyHandshakeTimeout:
                return .timeout
            case .remoteConnectionClosed:
                return .connect
            default:
                return .other
            }
        case let error as NIOConnectionError:
            if error.connectionErrors.isEmpty, error.dnsAError != nil || error.dnsAAAAError != nil {
                return .dns
            }
            if let first = error.connectionErrors.first {
                let kind = kind(of: first.error)
                return kind == .other ? .connect : kind
            }
            return .connect
        case is SocketAddressError, is SocketAddressError.UnknownHost:
            return .dns
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return .timeout
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed, .inputClosed: return .connect
            default: return .other
            }
        case let error as IOError:
            switch error.errnoCode {
            case ETIMEDOUT: return .timeout
            case ECONNREFUSED, ECONNRESET, ECONNABORTED, EPIPE, ENETUNREACH, EHOSTUNREACH, ENETDOWN: return .connect
            default: return .other
            }
        case HTTPParserError.invalidEOFState:
            // The connection closed before the answer was whole (libcurl's partial file).
            return .connect
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            return .tls
        case let error as NIOHTTPDecompression.DecompressionError where error == .limit:
            // More decoded bytes than the client's decompression limit allows.
            return .tooLarge
        default:
            return .other
        }
    }
}
