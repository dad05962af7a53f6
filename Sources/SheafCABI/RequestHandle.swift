import CSheafHeader
import Sheaf
import Synchronization

/// One request handed to a C transport: the `sheaf_request` behind the opaque pointer.
///
/// Retained while the transport holds it; answering releases it.
final class RequestHandle: Sendable {
    let method: OwnedCString
    let url: OwnedCString
    let headers: [(name: OwnedCString, value: OwnedCString)]
    let body: [UInt8]
    let timeoutMilliseconds: Int
    let maxBodyBytes: Int
    private let responseHeaders = Mutex<[HTTPHeader]>([])
    private let cancelled = Atomic<Bool>(false)
    private let completion: @Sendable (Result<HTTPResponse, TransportError>) -> Void

    init(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
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

    static func from(_ pointer: OpaquePointer?) -> RequestHandle? {
        pointer.map { Unmanaged<RequestHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }

    /// Ends the transport's hold on the request (after it answered).
    static func release(_ pointer: OpaquePointer) {
        Unmanaged<RequestHandle>.fromOpaque(UnsafeRawPointer(pointer)).release()
    }
}

/// A `Transport` that calls a C function pointer, each call on a library thread of its own so a
/// blocking transport still gets the whole window in flight.
struct CFunctionTransport: Transport {
    let function: sheaf_transport_fn
    /// The embedder's pointer, kept as bits: the embedder vouches for it across threads.
    let userData: UInt

    func send(_ request: HTTPRequest,
              completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any TransportTask {
        let handle = RequestHandle(request, completion: completion)
        let function = function
        let userData = userData
        BlockingWorkers.shared.run {
            // The transport's hold on the request; sheaf_request_respond or _fail releases it.
            let pointer = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
            function(pointer, UnsafeMutableRawPointer(bitPattern: userData))
        }
        return CancelRequest(handle: handle)
    }

    struct CancelRequest: TransportTask {
        let handle: RequestHandle
        func cancel() { handle.cancel() }
    }
}

// MARK: - Exports

@c @implementation
public func sheaf_request_method(_ request: OpaquePointer?) -> UnsafePointer<CChar>! {
    RequestHandle.from(request).map { UnsafePointer($0.method.pointer) }
}

@c @implementation
public func sheaf_request_url(_ request: OpaquePointer?) -> UnsafePointer<CChar>! {
    RequestHandle.from(request).map { UnsafePointer($0.url.pointer) }
}

@c @implementation
public func sheaf_request_header_count(_ request: OpaquePointer?) -> Int {
    RequestHandle.from(request)?.headers.count ?? 0
}

@c @implementation
public func sheaf_request_header(_ request: OpaquePointer?, _ index: Int,
                                 _ outName: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                 _ outValue: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> sheaf_result {
    guard let handle = RequestHandle.from(request), index >= 0, index < handle.headers.count else {
        return SHEAF_E_INVALID_ARGUMENT
    }
    outName?.pointee = UnsafePointer(handle.headers[index].name.pointer)
    outValue?.pointee = UnsafePointer(handle.headers[index].value.pointer)
    return SHEAF_OK
}

@c @implementation
public func sheaf_request_body(_ request: OpaquePointer?, _ outLength: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>! {
    outLength?.pointee = 0
    guard let handle = RequestHandle.from(request), !handle.body.isEmpty else { return nil }
    outLength?.pointee = handle.body.count
    // The array is immutable for the handle's life, so its storage address is stable.
    return handle.body.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self) }
}

@c @implementation
public func sheaf_request_timeout_ms(_ request: OpaquePointer?) -> Int64 {
    Int64(RequestHandle.from(request)?.timeoutMilliseconds ?? 0)
}

@c @implementation
public func sheaf_request_max_body_bytes(_ request: OpaquePointer?) -> Int64 {
    Int64(RequestHandle.from(request)?.maxBodyBytes ?? 0)
}

@c @implementation
public func sheaf_request_is_cancelled(_ request: OpaquePointer?) -> Int32 {
    RequestHandle.from(request)?.isCancelled == true ? 1 : 0
}

@c @implementation
public func sheaf_request_add_response_header(_ request: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                              _ value: UnsafePointer<CChar>?) -> sheaf_result {
    guard let handle = RequestHandle.from(request), let name = CString.read(name), let value = CString.read(value) else {
        return SHEAF_E_INVALID_ARGUMENT
    }
    handle.addResponseHeader(HTTPHeader(name: name, value: value))
    return SHEAF_OK
}

@c @implementation
public func sheaf_request_respond(_ request: OpaquePointer?, _ status: Int32,
                                  _ body: UnsafePointer<CChar>?, _ bodyLength: Int) -> sheaf_result {
    guard let request, let handle = RequestHandle.from(request), (100...999).contains(status),
          bodyLength >= 0, body != nil || bodyLength == 0 else {
        return SHEAF_E_INVALID_ARGUMENT
    }
    let bytes = body.map { Array(UnsafeRawBufferPointer(start: $0, count: bodyLength)) } ?? []
    handle.respond(status: Int(status), body: bytes)
    RequestHandle.release(request)
    return SHEAF_OK
}

@c @implementation
public func sheaf_request_fail(_ request: OpaquePointer?, _ kind: sheaf_transport_error,
                               _ message: UnsafePointer<CChar>?) -> sheaf_result {
    guard let request, let handle = RequestHandle.from(request) else { return SHEAF_E_INVALID_ARGUMENT }
    let mapped: TransportError.Kind = switch kind {
    case SHEAF_TRANSPORT_TIMEOUT: .timeout
    case SHEAF_TRANSPORT_CONNECT: .connect
    case SHEAF_TRANSPORT_DNS: .dns
    case SHEAF_TRANSPORT_TLS: .tls
    case SHEAF_TRANSPORT_TOO_LARGE: .tooLarge
    default: .other
    }
    handle.fail(TransportError(mapped, CString.read(message) ?? ""))
    RequestHandle.release(request)
    return SHEAF_OK
}
