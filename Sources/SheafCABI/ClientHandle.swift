import CSheafHeader
import Sheaf
import SheafCurl
import Synchronization

/// The `sheaf_client` behind the opaque pointer: settings that later lists snapshot.
final class ClientHandle: Sendable {
    private struct Settings {
        var configuration = ClientConfiguration()
        var transport: CFunctionTransport?
        var curl: CurlTransport?
    }

    let baseURL: String
    let bearerToken: String?
    private let settings = Mutex(Settings())
    let errors = ErrorRecord()

    init(baseURL: String, bearerToken: String?) throws(SheafError) {
        self.baseURL = baseURL
        self.bearerToken = bearerToken
        // Validates the base URL and token now rather than at the first list.
        try SheafClient.validate(baseURL: baseURL, bearerToken: bearerToken)
    }

    /// A client with the current settings, for one list; `transport`, when given, in place of
    /// the client's own.
    func makeClient(transport listTransport: CFunctionTransport? = nil) throws(SheafError) -> SheafClient {
        let (configuration, transport) = settings.withLock { settings -> (ClientConfiguration, any Transport) in
            if let custom = listTransport ?? settings.transport { return (settings.configuration, custom) }
            if settings.curl == nil { settings.curl = CurlTransport() }
            return (settings.configuration, settings.curl!)
        }
        return try SheafClient(baseURL: baseURL, bearerToken: bearerToken, transport: transport, configuration: configuration)
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
        }
    }

    func setTransport(_ transport: CFunctionTransport?) {
        settings.withLock { $0.transport = transport }
    }

    static func from(_ pointer: OpaquePointer?) -> ClientHandle? {
        pointer.map { Unmanaged<ClientHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

/// The last error of a handle, readable as a borrowed C string.
final class ErrorRecord: Sendable {
    private struct Record {
        var message = OwnedCString("")
        var httpStatus = 0
        var body = OwnedCString("")
    }
    private let record = Mutex(Record())

    /// Records `error` and returns its result code.
    @discardableResult
    func set(_ error: SheafError) -> sheaf_result {
        record.withLock {
            $0.message = OwnedCString(error.message)
            $0.httpStatus = error.code == .http ? error.httpStatus ?? 0 : 0
            $0.body = OwnedCString(error.code == .http ? error.bodyExcerpt ?? "" : "")
        }
        return error.code.cResult
    }

    func clear() {
        record.withLock { $0 = Record() }
    }

    /// The message; valid until the next `set` or `clear`.
    var message: UnsafePointer<CChar> { record.withLock { UnsafePointer($0.message.pointer) } }
    var httpStatus: Int { record.withLock { $0.httpStatus } }
    var body: UnsafePointer<CChar> { record.withLock { UnsafePointer($0.body.pointer) } }
}

// MARK: - Exports

@c @implementation
public func sheaf_client_new(_ outClient: UnsafeMutablePointer<OpaquePointer?>?, _ baseURL: UnsafePointer<CChar>?,
                             _ bearerToken: UnsafePointer<CChar>?) -> sheaf_result {
    guard let outClient else { return SHEAF_E_INVALID_ARGUMENT }
    outClient.pointee = nil
    guard let baseURL = CString.read(baseURL) else { return SHEAF_E_INVALID_ARGUMENT }
    do {
        let handle = try ClientHandle(baseURL: baseURL, bearerToken: CString.read(bearerToken))
        outClient.pointee = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
        return SHEAF_OK
    } catch {
        return error.code.cResult
    }
}

@c @implementation
public func sheaf_client_free(_ client: OpaquePointer?) {
    // Lists hold their own references, so this never waits; safe from a callback too.
    guard let client else { return }
    Unmanaged<ClientHandle>.fromOpaque(UnsafeRawPointer(client)).release()
}

@c @implementation
public func sheaf_client_errmsg(_ client: OpaquePointer?) -> UnsafePointer<CChar>! {
    ClientHandle.from(client)?.errors.message ?? sheaf_result_str(Int32(SHEAF_E_INVALID_ARGUMENT.rawValue))
}

@c @implementation
public func sheaf_client_set_option(_ client: OpaquePointer?, _ option: sheaf_option, _ value: Int64) -> sheaf_result {
    guard let handle = ClientHandle.from(client) else { return SHEAF_E_INVALID_ARGUMENT }
    do {
        try handle.setOption(option, value)
        handle.errors.clear()
        return SHEAF_OK
    } catch {
        return handle.errors.set(error)
    }
}

@c @implementation
public func sheaf_client_set_transport(_ client: OpaquePointer?, _ transport: sheaf_transport_fn?,
                                       _ userData: UnsafeMutableRawPointer?) -> sheaf_result {
    guard let handle = ClientHandle.from(client) else { return SHEAF_E_INVALID_ARGUMENT }
    handle.setTransport(transport.map { CFunctionTransport(function: $0, userData: UInt(bitPattern: userData)) })
    return SHEAF_OK
}
