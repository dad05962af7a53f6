import CSheafHeader
import Sheaf
import SheafCurl

/// The `sheaf_client` behind the opaque pointer: settings, and the one core client made of them
/// (made again only after a setting changes), which lists started from now on use.
final class ClientHandle: Sendable {
    struct Settings {
        var configuration = ClientConfiguration()
        var transport: CFunctionTransport?
        var curl: CurlTransport?
        var credential: Credential?
        /// Makes the credential in place of `credential`.
        var credentialProvider: CredentialProvider?
        var headers: [HTTPHeader] = []
        var secretParameters: [String] = []
        var hooks = HookSettings()
        /// The core client of the current settings; nil after a change.
        var client: SheafClient?
        /// The origin windows every client made with these settings sends through.
        var windows: OriginWindows?

        /// The settings changed: clients and windows are made anew for the next list.
        mutating func changed() {
            client = nil
            windows = nil
        }
    }

    let baseURL: String
    private let settings = Locked(Settings())

    init(baseURL: String) throws(SheafError) {
        self.baseURL = baseURL
        // Validates the base URL now rather than at the first list.
        try SheafClient.validate(baseURL: baseURL)
        // libcurl and its TLS library get ready meanwhile: not while the first list waits.
        CurlTransport.warmUp()
    }

    /// A client with the current settings, for one list or request; `transport`, when given, in
    /// place of the client's own, and `headers` replacing the client's of the same name.
    func makeClient(transport listTransport: CFunctionTransport? = nil, headers extra: [HTTPHeader] = []) throws(SheafError) -> SheafClient {
        try settings.withLock { (settings) throws(SheafError) -> SheafClient in
            let shared = listTransport == nil && extra.isEmpty
            if shared, let client = settings.client { return client }
            // Every core client made with these settings (the shared one, and a list's own for its
            // transport or headers) sends through one set of origin windows: one budget per origin
            // for everything the client runs.
            let windows = settings.windows ?? OriginWindows(configuration: settings.configuration, hooks: settings.hooks.hooks())
            settings.windows = windows
            let names = Set(extra.map { $0.name.lowercased() })
            let client = try SheafClient(baseURL: baseURL, credential: settings.credential,
                                         headers: settings.headers.filter { !names.contains($0.name.lowercased()) } + extra,
                                         secretParameters: settings.secretParameters,
                                         transport: listTransport ?? defaultTransport(&settings),
                                         configuration: settings.configuration, hooks: settings.hooks.hooks(),
                                         credentialProvider: settings.credentialProvider)
            client.sendsThroughWindows(windows)
            if shared { settings.client = client }
            return client
        }
    }

    /// The client's transport: the custom one, or libcurl (made once).
    private func defaultTransport(_ settings: inout Settings) -> any Transport {
        if let custom = settings.transport { return custom }
        if settings.curl == nil { settings.curl = CurlTransport() }
        return settings.curl!
    }

    /// An option that is off (0) or on (1).
    private func flag(_ value: Int, _ what: String) throws(SheafError) -> Bool {
        guard value == 0 || value == 1 else { throw SheafError(.invalidArgument, "\(what) must be 0 or 1, not \(value)") }
        return value == 1
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
            case SHEAF_OPT_CROSS_ORIGIN:
                configuration.crossOrigin = try flag(value, "the cross-origin policy") ? .followWithoutCredentials : .refuse
            case SHEAF_OPT_TLS_INSECURE:
                configuration.tls.insecure = try flag(value, "SHEAF_OPT_TLS_INSECURE")
            case SHEAF_OPT_ADAPTIVE_WINDOW:
                configuration.adaptsWindow = try flag(value, "SHEAF_OPT_ADAPTIVE_WINDOW")
            case SHEAF_OPT_MAX_WINDOW: configuration.maxWindow = value
            case SHEAF_OPT_MAX_WAIT_MS: configuration.maxWaitMilliseconds = value
            case SHEAF_OPT_HTTP_VERSION:
                switch value {
                case Int(SHEAF_HTTP_AUTO.rawValue): configuration.httpVersion = .automatic
                case Int(SHEAF_HTTP_1_1.rawValue): configuration.httpVersion = .http1_1
                case Int(SHEAF_HTTP_2_PRIOR_KNOWLEDGE.rawValue): configuration.httpVersion = .http2PriorKnowledge
                default: throw SheafError(.invalidArgument, "SHEAF_OPT_HTTP_VERSION must be a sheaf_http_version (0, 1 or 2), not \(value)")
                }
            default: throw SheafError(.invalidArgument, "unknown option \(option.rawValue)")
            }
            settings.configuration = try configuration.validated()
            settings.changed()
        }
    }

    func setTransport(_ transport: CFunctionTransport?) {
        settings.withLock {
            $0.transport = transport
            $0.changed()
        }
    }

    /// Changes a setting; the core client is made again for the lists and requests after it.
    func change(_ body: (inout Settings) throws(SheafError) -> Void) throws(SheafError) {
        try settings.withLock { (settings) throws(SheafError) in
            try body(&settings)
            settings.changed()
        }
    }

    func setCredential(_ credential: Credential?) throws(SheafError) {
        try SheafClient.validate(baseURL: baseURL, credential: credential)
        try change {
            $0.credential = credential
            $0.credentialProvider = nil
        }
    }


    /// Waits until every record and event made so far has been handed to the hooks.
    func flushHooks() {
        for hooks in settings.withLock({ $0.hooks.all }) { hooks.flush() }
    }

    /// Closes every hook: none is called after this returns (those still queued are dropped).
    func closeHooks() {
        for hooks in settings.withLock({ $0.hooks.all }) { hooks.close() }
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
    guard let client, let handle = ClientHandle.from(client) else { return }
    handle.closeHooks()
    Unmanaged<ClientHandle>.fromOpaque(UnsafeRawPointer(client)).release()
}

@c @implementation
public func sheaf_client_flush_hooks(_ client: OpaquePointer?) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in
        guard !CallbackContext.isInsideCallback else { throw SheafError.blockingCallInsideCallback }
        handle.flushHooks()
    }
}

@c @implementation
public func sheaf_client_set_log(_ client: OpaquePointer?, _ level: sheaf_log_level, _ onLog: sheaf_log_fn?,
                                 _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withClient(client) { (handle) throws(SheafError) in
            guard let level = LogRecord.Level(rawValue: Int(level.rawValue)) else {
                throw SheafError(.invalidArgument, "the log level must be SHEAF_LOG_ERROR..SHEAF_LOG_DEBUG, not \(level.rawValue)")
            }
            try handle.change { $0.hooks.log = onLog.map { CLogHook(function: $0, level: level, userData: owned) } }
        }
    }
}

@c @implementation
public func sheaf_client_set_event_handler(_ client: OpaquePointer?, _ onEvent: sheaf_event_fn?,
                                           _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withClient(client) { (handle) throws(SheafError) in
            try handle.change { $0.hooks.event = onEvent.map { CEventHook(function: $0, userData: owned) } }
        }
    }
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
        guard kind == SHEAF_AUTH_NONE || kind == SHEAF_AUTH_BEARER else {
            throw SheafError(.invalidArgument, "auth kind \(kind.rawValue) needs a name: use sheaf_client_set_credential")
        }
        try handle.setCredential(try credential(kind, name: nil, value: value))
    }
}

@c @implementation
public func sheaf_client_set_credential(_ client: OpaquePointer?, _ kind: sheaf_auth, _ name: UnsafePointer<CChar>?,
                                        _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in
        try handle.setCredential(try credential(kind, name: name, value: value))
    }
}

/// The credential of a C call (nil for SHEAF_AUTH_NONE).
private func credential(_ kind: sheaf_auth, name: UnsafePointer<CChar>?, value: UnsafePointer<CChar>?) throws(SheafError) -> Credential? {
    switch kind {
    case SHEAF_AUTH_NONE: return nil
    case SHEAF_AUTH_BEARER: return .bearer(try CString.required(value, "the bearer token"))
    case SHEAF_AUTH_BASIC: return .basic(user: try CString.required(name, "the Basic user name"), password: try CString.required(value, "the password"))
    case SHEAF_AUTH_API_KEY_HEADER: return .apiKeyHeader(name: try CString.required(name, "the API key header name"), value: try CString.required(value, "the API key"))
    case SHEAF_AUTH_API_KEY_QUERY: return .apiKeyQuery(name: try CString.required(name, "the API key parameter name"), value: try CString.required(value, "the API key"))
    default: throw SheafError(.invalidArgument, "unknown auth kind \(kind.rawValue)")
    }
}

@c @implementation
public func sheaf_client_set_credential_provider(_ client: OpaquePointer?, _ kind: sheaf_auth, _ name: UnsafePointer<CChar>?,
                                                 _ provider: sheaf_credential_fn?, _ userData: UnsafeMutableRawPointer?,
                                                 _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    // Once accepted, released (and destroyed) with the last client that uses it.
    registering(userData, destroy: destroy) { owner in
        withClient(client) { (handle) throws(SheafError) in
            guard let provider else { return try handle.change { $0.credentialProvider = nil } }
            let made = try cCredentialProvider(kind: kind, name: try CString.text(name, "the name"), function: provider, userData: owner)
            try handle.change {
                $0.credential = nil
                $0.credentialProvider = made
            }
        }
    }
}

@c @implementation
public func sheaf_client_add_header(_ client: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                    _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in
        let header = try CString.header(name, value)
        try handle.change { $0.headers.replace(with: header) }
    }
}

@c @implementation
public func sheaf_client_add_secret_param(_ client: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in
        let name = try CString.nonEmpty(name, "the parameter name")
        try handle.change { $0.secretParameters.append(name) }
    }
}

@c @implementation
public func sheaf_client_set_tls_file(_ client: OpaquePointer?, _ which: sheaf_tls_file, _ path: UnsafePointer<CChar>?) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in
        let path = try CString.text(path, "the path")
        if path?.isEmpty == true { throw SheafError(.invalidArgument, "the path must not be empty (NULL restores the default)") }
        try handle.change { (settings) throws(SheafError) in
            switch which {
            case SHEAF_TLS_CA_FILE: settings.configuration.tls.caFile = path
            case SHEAF_TLS_CA_DIRECTORY: settings.configuration.tls.caDirectory = path
            case SHEAF_TLS_CERT: settings.configuration.tls.certificate = path
            case SHEAF_TLS_KEY: settings.configuration.tls.privateKey = path
            default: throw SheafError(.invalidArgument, "unknown TLS file \(which.rawValue)")
            }
        }
    }
}

@c @implementation
public func sheaf_client_set_cache(_ client: OpaquePointer?, _ folder: UnsafePointer<CChar>?, _ maxBytes: Int64) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in
        let folder = try CString.text(folder, "the cache folder")
        guard let size = Int(exactly: maxBytes), size >= 0 else { throw SheafError(.invalidArgument, "max_bytes must be 0 or more") }
        let cache = try folder.map { (path) throws(SheafError) in
            try ResponseCache(folder: path, maxBytes: size == 0 ? ResponseCache.defaultMaxBytes : size)
        }
        try handle.change { $0.configuration.cache = cache }
    }
}

@c @implementation
public func sheaf_client_set_option(_ client: OpaquePointer?, _ option: sheaf_option, _ value: Int64) -> sheaf_result {
    withClient(client) { (handle) throws(SheafError) in try handle.setOption(option, value) }
}

@c @implementation
public func sheaf_client_set_transport(_ client: OpaquePointer?, _ transport: sheaf_transport_fn?,
                                       _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withClient(client) { handle in
            handle.setTransport(transport.map { CFunctionTransport(function: $0, userData: owned) })
        }
    }
}
