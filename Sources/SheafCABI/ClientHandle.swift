import CSheafHeader
import Sheaf
import SheafCurl

/// The `sheaf_client` behind the opaque pointer: settings, and the one core client made of them
/// (made again only after a setting changes), which lists started from now on use.
final class ClientHandle: Sendable {
    private struct Settings {
        var configuration = ClientConfiguration()
        var transport: CFunctionTransport?
        var curl: CurlTransport?
        var bearerToken: String?
        /// The core client of the current settings; nil after a change.
        var client: SheafClient?
    }

    let baseURL: String
    private let settings = Locked(Settings())

    init(baseURL: String) throws(SheafError) {
        self.baseURL = baseURL
        // Validates the base URL now rather than at the first list.
        try SheafClient.validate(baseURL: baseURL, bearerToken: nil)
    }

    /// A client with the current settings, for one list; `transport`, when given, in place of
    /// the client's own.
    func makeClient(transport listTransport: CFunctionTransport? = nil) throws(SheafError) -> SheafClient {
        try settings.withLock { (settings) throws(SheafError) -> SheafClient in
            if let listTransport {
                return try SheafClient(baseURL: baseURL, bearerToken: settings.bearerToken, transport: listTransport,
                                       configuration: settings.configuration)
            }
            if let client = settings.client { return client }
            let transport: any Transport
            if let custom = settings.transport {
                transport = custom
            } else {
                if settings.curl == nil { settings.curl = CurlTransport() }
                transport = settings.curl!
            }
            let client = try SheafClient(baseURL: baseURL, bearerToken: settings.bearerToken, transport: transport,
                                         configuration: settings.configuration)
            settings.client = client
            return client
        }
    }

    func setOption(_ option: sheaf_option, _ value: Int64) throws(SheafError) {
        guard let value = Int(exactly: value) else { throw SheafError(.invalidArgument, "option value out of range") }
        try settings.withLock { (settings) throws(SheafError) in
            var configuration = settings.configuration
            switch option {
            case SHEAF_OPT_WINDOW: configuration.window = value
            case SHEAF_OPT_MAX_PAGES: configuration.maxPages = value
            case SHEAF_OPT_MAX_BODY_BYTES: configuration.maxBodyBytes = value
            case SHEAF_OPT_MAX_ATTEMPTS: configuration.retry.maxAttempts = value
            case SHEAF_OPT_RETRY_BASE_MS: configuration.retry.baseDelayMilliseconds = value
            case SHEAF_OPT_RETRY_MAX_MS: configuration.retry.maxDelayMilliseconds = value
            case SHEAF_OPT_TIMEOUT_MS: configuration.timeoutMilliseconds = value
            case SHEAF_OPT_CONNECT_TIMEOUT_MS: configuration.connectTimeoutMilliseconds = value
            case SHEAF_OPT_MAX_REDIRECTS: configuration.maxRedirects = value
            default: throw SheafError(.invalidArgument, "unknown option \(option.rawValue)")
            }
            settings.configuration = try configuration.validated()
            settings.client = nil
        }
    }

    func setTransport(_ transport: CFunctionTransport?) {
        settings.withLock {
            $0.transport = transport
            $0.client = nil
        }
    }

    func setBearerToken(_ token: String?) throws(SheafError) {
        try SheafClient.validate(baseURL: baseURL, bearerToken: token)
        settings.withLock {
            $0.bearerToken = token
            $0.client = nil
        }
    }

    static func from(_ pointer: OpaquePointer?) -> ClientHandle? {
        pointer.map { Unmanaged<ClientHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

// MARK: - Exports

@c @implementation
public func sheaf_client_new(_ outClient: UnsafeMutablePointer<OpaquePointer?>?,
                             _ baseURL: UnsafePointer<CChar>?) -> sheaf_result {
    guard let outClient else { return failure(SheafError(.invalidArgument, "out_client must not be NULL")) }
    outClient.pointee = nil
    do throws(SheafError) {
        guard let baseURL = try CString.text(baseURL, "the base URL") else {
            throw SheafError(.invalidArgument, "the base URL must not be NULL")
        }
        let handle = try ClientHandle(baseURL: baseURL)
        outClient.pointee = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
        return success()
    } catch {
        return failure(error)
    }
}

@c @implementation
public func sheaf_client_free(_ client: OpaquePointer?) {
    // Lists hold their own references, so this never waits; safe from a callback too.
    guard let client else { return }
    Unmanaged<ClientHandle>.fromOpaque(UnsafeRawPointer(client)).release()
}

/// Runs `body` against the client behind `client`, turning a thrown error into this thread's.
private func withClient(_ client: OpaquePointer?, _ body: (ClientHandle) throws(SheafError) -> Void) -> sheaf_result {
    guard let handle = ClientHandle.from(client) else {
        return failure(SheafError(.invalidArgument, "the client must not be NULL"))
    }
    do {
        try body(handle)
        return success()
    } catch {
        return failure(error)
    }
}

@c @implementation
public func sheaf_client_set_auth(_ client: OpaquePointer?, _ kind: sheaf_auth, _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in
        switch kind {
        case SHEAF_AUTH_NONE:
            try handle.setBearerToken(nil)
        case SHEAF_AUTH_BEARER:
            guard let token = try CString.text(value, "the bearer token"), !token.isEmpty else {
                throw SheafError(.invalidArgument, "a bearer token must be a non-empty string")
            }
            try handle.setBearerToken(token)
        default:
            throw SheafError(.invalidArgument, "unknown auth kind \(kind.rawValue)")
        }
    }
}

@c @implementation
public func sheaf_client_set_option(_ client: OpaquePointer?, _ option: sheaf_option, _ value: Int64) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in try handle.setOption(option, value) }
}

@c @implementation
public func sheaf_client_set_transport(_ client: OpaquePointer?, _ transport: sheaf_transport_fn?,
                                       _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    withClient(client) { handle in
        handle.setTransport(transport.map { CFunctionTransport(function: $0, userData: CUserData(userData, destroy: destroy)) })
    }
}
