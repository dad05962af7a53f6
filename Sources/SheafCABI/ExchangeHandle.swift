import CSheafHeader
import Sheaf
import Synchronization

/// One request handed to a C transport: the `sheaf_exchange` behind the opaque pointer.
///
/// Retained while the transport holds it; answering releases it.
final class ExchangeHandle: Sendable {
    let method: OwnedCString
    let url: OwnedCString
    let headers: [(name: OwnedCString, value: OwnedCString)]
    let body: [UInt8]
    let timeoutMilliseconds: Int
    let maxBodyBytes: Int
    private let responseHeaders = Locked<[HTTPHeader]>([])
    private let cancelled = Atomic<Bool>(false)
    private let completion: @Sendable (Result<HTTPResponse, TransportError>) -> Void
    /// The transport's user data stays alive until the exchange is answered.
    private let userData: CUserData

    init(_ request: HTTPRequest, userData: CUserData,
         completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        self.userData = userData
        method = OwnedCString(request.method)
        url = OwnedCString(request.url)
        headers = request.headers.map { (OwnedCString($0.name), OwnedCString($0.value)) }
        body = request.body
        timeoutMilliseconds = request.timeoutMilliseconds
        maxBodyBytes = request.maxBodyBytes
        self.completion = completion
    }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    func cancel() { cancelled.store(true, ordering: .relaxed) }

    func addResponseHeader(_ header: HTTPHeader) {
        responseHeaders.withLock { $0.append(header) }
    }

    func respond(status: Int, body: [UInt8]) {
        completion(.success(HTTPResponse(status: status, headers: responseHeaders.withLock { $0 }, body: body)))
    }

    func fail(_ error: TransportError) {
        completion(.failure(error))
    }

    static func from(_ pointer: OpaquePointer?) -> ExchangeHandle? {
        pointer.map { Unmanaged<ExchangeHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }

    /// Ends the transport's hold on the request (after it answered).
    static func release(_ pointer: OpaquePointer) {
        Unmanaged<ExchangeHandle>.fromOpaque(UnsafeRawPointer(pointer)).release()
    }
}

/// A `Transport` that calls a C function pointer, each call on a library thread of its own so a
/// blocking transport still gets the whole window in flight.
struct CFunctionTransport: Transport {
    let function: sheaf_transport_fn
    /// The embedder's pointer; released (its destroy function called) when no client, list or
    /// unanswered exchange holds this transport any more.
    let userData: CUserData

    func send(_ request: HTTPRequest,
              completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any TransportTask {
        let handle = ExchangeHandle(request, userData: userData, completion: completion)
        let function = function
        let userData = userData
        BlockingWorkers.shared.run {
            // The transport's hold on the exchange; sheaf_exchange_respond or _fail releases it.
            let exchange = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
            function(exchange, userData.pointer)
        }
        return CancelExchange(handle: handle)
    }

    struct CancelExchange: TransportTask {
        let handle: ExchangeHandle
        func cancel() { handle.cancel() }
    }
}

/// An embedder's `user_data` and its destroy function, called once when the last holder lets go.
final class CUserData: @unchecked Sendable {
    // Safe: `bits` and `destroy` are immutable (the embedder vouches for the pointer across
    // threads); `isOwned` is written only by the registering call, before it returns, and read
    // in deinit, after the last reference is gone; `destroyed` is atomic.
    private let bits: UInt
    private let destroy: sheaf_destroy_fn?
    private var isOwned = true
    private let destroyed = Atomic<Bool>(false)

    init(_ pointer: UnsafeMutableRawPointer?, destroy: sheaf_destroy_fn?) {
        bits = UInt(bitPattern: pointer)
        self.destroy = destroy
    }

    var pointer: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: bits) }

    /// Gives the user data back to the caller: `destroy` is never called for it.
    func disown() {
        isOwned = false
    }

    /// Calls `destroy` now, once (a free that promises the data is gone when it returns, while
    /// a closure holding this may live on elsewhere a little longer); the deinit then does not.
    func destroyNow() {
        guard isOwned, !destroyed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        destroy?(pointer)
    }

    deinit {
        destroyNow()
    }
}

/// Runs `register`, a call that takes a callback's user data, and hands the data to the library
/// only when it succeeds: a refused call leaves it with the caller, `destroy` never called (the
/// header's ownership rule), so a caller that frees its data after an error frees it once.
func registering(_ userData: UnsafeMutableRawPointer?, destroy: sheaf_destroy_fn?,
                 _ register: (CUserData) -> sheaf_result) -> sheaf_result {
    let owned = CUserData(userData, destroy: destroy)
    let result = register(owned)
    if result != SHEAF_OK { owned.disown() }
    return result
}

// MARK: - Exports

@c @implementation
public func sheaf_exchange_method(_ exchange: OpaquePointer?) -> UnsafePointer<CChar>! {
    ExchangeHandle.from(exchange).map { UnsafePointer($0.method.pointer) }
}

@c @implementation
public func sheaf_exchange_url(_ exchange: OpaquePointer?) -> UnsafePointer<CChar>! {
    ExchangeHandle.from(exchange).map { UnsafePointer($0.url.pointer) }
}

@c @implementation
public func sheaf_exchange_header_count(_ exchange: OpaquePointer?) -> Int {
    ExchangeHandle.from(exchange)?.headers.count ?? 0
}

@c @implementation
public func sheaf_exchange_header(_ exchange: OpaquePointer?, _ index: Int,
                                 _ outName: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                 _ outValue: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> sheaf_result {
    guard let handle = ExchangeHandle.from(exchange), index >= 0, index < handle.headers.count else {
        return SHEAF_E_INVALID_ARGUMENT
    }
    outName?.pointee = UnsafePointer(handle.headers[index].name.pointer)
    outValue?.pointee = UnsafePointer(handle.headers[index].value.pointer)
    return SHEAF_OK
}

@c @implementation
public func sheaf_exchange_body(_ exchange: OpaquePointer?, _ outLength: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>! {
    outLength?.pointee = 0
    guard let handle = ExchangeHandle.from(exchange), !handle.body.isEmpty else { return nil }
    outLength?.pointee = handle.body.count
    // The array is immutable for the handle's life, so its storage address is stable.
    return handle.body.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self) }
}

@c @implementation
public func sheaf_exchange_timeout_ms(_ exchange: OpaquePointer?) -> Int64 {
    Int64(ExchangeHandle.from(exchange)?.timeoutMilliseconds ?? 0)
}

@c @implementation
public func sheaf_exchange_max_body_bytes(_ exchange: OpaquePointer?) -> Int64 {
    Int64(ExchangeHandle.from(exchange)?.maxBodyBytes ?? 0)
}

@c @implementation
public func sheaf_exchange_is_cancelled(_ exchange: OpaquePointer?) -> Int32 {
    ExchangeHandle.from(exchange)?.isCancelled == true ? 1 : 0
}

@c @implementation
public func sheaf_exchange_add_response_header(_ exchange: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                              _ value: UnsafePointer<CChar>?) -> sheaf_result {
    guard let handle = ExchangeHandle.from(exchange), let name = CString.read(name), let value = CString.read(value) else {
        return SHEAF_E_INVALID_ARGUMENT
    }
    handle.addResponseHeader(HTTPHeader(name: name, value: value))
    return SHEAF_OK
}

@c @implementation
public func sheaf_exchange_respond(_ exchange: OpaquePointer?, _ status: Int32,
                                  _ body: UnsafePointer<CChar>?, _ bodyLength: Int) -> sheaf_result {
    guard let exchange, let handle = ExchangeHandle.from(exchange), (100...999).contains(status),
          bodyLength >= 0, body != nil || bodyLength == 0 else {
        return SHEAF_E_INVALID_ARGUMENT
    }
    let bytes = body.map { Array(UnsafeRawBufferPointer(start: $0, count: bodyLength)) } ?? []
    handle.respond(status: Int(status), body: bytes)
    ExchangeHandle.release(exchange)
    return SHEAF_OK
}

@c @implementation
public func sheaf_exchange_fail(_ exchange: OpaquePointer?, _ kind: sheaf_transport_error,
                               _ message: UnsafePointer<CChar>?) -> sheaf_result {
    guard let exchange, let handle = ExchangeHandle.from(exchange) else { return SHEAF_E_INVALID_ARGUMENT }
    let mapped: TransportError.Kind = switch kind {
    case SHEAF_TRANSPORT_TIMEOUT: .timeout
    case SHEAF_TRANSPORT_CONNECT: .connect
    case SHEAF_TRANSPORT_DNS: .dns
    case SHEAF_TRANSPORT_TLS: .tls
    case SHEAF_TRANSPORT_TOO_LARGE: .tooLarge
    default: .other
    }
    handle.fail(TransportError(mapped, CString.read(message) ?? ""))
    ExchangeHandle.release(exchange)
    return SHEAF_OK
}
