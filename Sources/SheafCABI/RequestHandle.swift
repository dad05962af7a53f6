import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

/// The `sheaf_request` behind the opaque pointer: a request being built, then one run of it and
/// its response as C memory.
final class RequestHandle: Sendable, ErrorRecording {
    private struct State {
        var request: Request
        var formFields: [Request.FormField]?
        /// A download's destination.
        var output: String?
        var run: RequestRun?
        var response: CResponse?
        var result: sheaf_result?
        var lastError: SheafError?
        /// The completion callback: set by start, taken when it runs or can no longer run.
        var callback: DoneCallback?
        /// Set by free: no callback starts any more.
        var isClosed = false
        /// The callback has returned, or will never run: `wait` and `close` wait for it.
        var callbackFinished = false
    }

    let client: ClientHandle
    private let state: Locked<State>

    init(client: ClientHandle, method: String, path: String) {
        self.client = client
        state = Locked(State(request: Request(method: method, path: path)))
    }

    /// Changes what will be sent; refused once started.
    func configure(_ change: (inout Request, inout [Request.FormField]?) throws(SheafError) -> Void) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            guard state.run == nil else { throw SheafError(.state, "the request has already been sent") }
            try change(&state.request, &state.formFields)
        }
    }

    func setOutput(_ path: String?) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            guard state.run == nil else { throw SheafError(.state, "the request has already been sent") }
            state.output = path
        }
    }

    var progress: (done: Int64, expected: Int64) { state.withLock { $0.run }?.progress ?? (0, -1) }

    func start(_ callback: DoneCallback?) throws(SheafError) {
        let run = try state.withLock { (state) throws(SheafError) -> RequestRun in
            guard state.run == nil else { throw SheafError(.state, "a request is sent once; create a new request to send it again") }
            var request = state.request
            if let fields = state.formFields { request.body = .form(fields) }
            let run = try client.makeClient().makeRequest(request, downloadingTo: state.output)
            state.run = run
            state.callback = callback
            return run
        }
        try run.start()
        run.whenFinished { [self] in finished(run) }
    }

    /// The run has its outcome: keep the response as C memory, then call back (unless freed).
    private func finished(_ run: RequestRun) {
        let (response, error) = run.outcome
        let result = error.map { $0.code.cResult } ?? SHEAF_OK
        var callback = state.withLock { state -> DoneCallback? in
            state.response = response.map(CResponse.init)
            state.result = result
            state.lastError = error
            guard !state.isClosed, let callback = state.callback else { return nil }
            state.callback = nil
            return callback
        }
        if let call = callback {
            CallbackContext.run(for: self) { call.call(self, result) }
        }
        // Its user data is released (the destroy function called) before anyone waiting is told
        // the callback is over: a caller that frees the request may then free the user data.
        callback = nil
        state.withLock { $0.callbackFinished = true }
        state.changed()
    }

    /// Blocks until the outcome is there and the callback has returned.
    func wait() throws(SheafError) -> sheaf_result {
        guard let run = state.withLock({ $0.run }) else { throw SheafError(.state, "the request has not been started") }
        let (_, error) = try run.wait()
        waitForCallback()
        if let error { throw error }
        return SHEAF_OK
    }

    private func waitForCallback() {
        state.withLock(when: \.callbackFinished, timeoutMilliseconds: nil) { _, _ in }
    }

    func cancel() {
        state.withLock { $0.run }?.cancel()
    }

    /// Cancels and makes sure no callback runs after this returns (one running on another thread
    /// is waited out; from inside the callback itself, nothing is waited for).
    func close() {
        let (run, inCallback) = state.withLock { state -> (RequestRun?, Bool) in
            state.isClosed = true
            state.callback = nil // its user data is released here, or after the running call
            return (state.run, CallbackContext.isServing(self))
        }
        guard let run else { return }
        run.cancel()
        if !inCallback { waitForCallback() }
    }

    func recordError(_ error: SheafError?) {
        state.withLock { $0.lastError = error }
    }

    var lastError: SheafError? { state.withLock { $0.lastError } }
    var response: CResponse? { state.withLock { $0.response } }

    static func from(_ pointer: OpaquePointer?) -> RequestHandle? {
        pointer.map { Unmanaged<RequestHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

/// A response as C memory, alive as long as its request handle.
final class CResponse: @unchecked Sendable {
    // Safe: immutable after init; freed once in deinit.
    let status: Int32
    let url: OwnedCString
    let headers: [(name: OwnedCString, value: OwnedCString)]
    /// The body followed by a NUL that is not counted.
    let body: UnsafeMutablePointer<CChar>
    let bodyLength: Int

    init(_ response: Response) {
        status = Int32(clamping: response.status)
        url = OwnedCString(response.url)
        headers = response.headers.map { (OwnedCString($0.name), OwnedCString($0.value)) }
        body = CString.mallocCopy(response.body) ?? strdup("")
        bodyLength = response.body.count
    }

    deinit {
        free(body)
    }
}

/// The caller's completion callback with its user data.
struct DoneCallback: Sendable {
    let function: sheaf_request_done_fn
    let userData: CUserData

    func call(_ handle: RequestHandle, _ result: sheaf_result) {
        function(OpaquePointer(Unmanaged.passUnretained(handle).toOpaque()), result, userData.pointer)
    }
}

// MARK: - Exports

/// Runs `body` against the request behind `request`, turning a thrown error into the request's
/// and the thread's error.
private func withRequest(_ request: OpaquePointer?, _ body: (RequestHandle) throws(SheafError) -> sheaf_result) -> sheaf_result {
    guard let handle = RequestHandle.from(request) else {
        return failure(SheafError(.invalidArgument, "the request must not be NULL"))
    }
    do {
        return success(try body(handle))
    } catch {
        return failure(error, on: handle)
    }
}


/// A name and value pair (a query parameter or a form field) from a caller's arguments.
private func formField(_ name: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?, _ noun: String) throws(SheafError) -> Request.FormField {
    Request.FormField(try CString.required(name, "the \(noun) name"), try CString.required(value, "the \(noun) value"))
}

@c @implementation
public func sheaf_request_new(_ outRequest: UnsafeMutablePointer<OpaquePointer?>?, _ client: OpaquePointer?,
                              _ method: UnsafePointer<CChar>?, _ path: UnsafePointer<CChar>?) -> sheaf_result {
    guard let outRequest else { return failure(SheafError(.invalidArgument, "out_request must not be NULL")) }
    outRequest.pointee = nil
    guard let clientHandle = ClientHandle.from(client) else {
        return failure(SheafError(.invalidArgument, "the client must not be NULL"))
    }
    do throws(SheafError) {
        let method = try CString.required(method, "the method")
        guard HeaderRules.isToken(method) else {
            throw SheafError(.invalidArgument, "\"\(method)\" is not an HTTP method (RFC 9110 token)")
        }
        let handle = RequestHandle(client: clientHandle, method: method, path: try CString.text(path, "the path") ?? "")
        outRequest.pointee = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
        return success()
    } catch {
        return failure(error)
    }
}

@c @implementation
public func sheaf_request_free(_ request: OpaquePointer?) {
    guard let request, let handle = RequestHandle.from(request) else { return }
    handle.close()
    Unmanaged<RequestHandle>.fromOpaque(UnsafeRawPointer(request)).release()
}

@c @implementation
public func sheaf_request_add_segment(_ request: OpaquePointer?, _ segment: UnsafePointer<CChar>?) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        let segment = try CString.required(segment, "the segment")
        try handle.configure { request, _ in request.appendSegment(segment) }
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_add_query(_ request: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                    _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        let field = try formField(name, value, "parameter")
        try handle.configure { request, _ in request.query.append(field) }
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_add_header(_ request: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                     _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        let header = try CString.header(name, value)
        try handle.configure { request, _ in request.headers.append(header) }
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_set_body(_ request: OpaquePointer?, _ contentType: UnsafePointer<CChar>?,
                                   _ data: UnsafeRawPointer?, _ length: Int) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        let contentType = try HeaderRules.check(HTTPHeader(name: "Content-Type", value: try CString.required(contentType, "the content type"))).value
        guard length == 0 || data != nil else { throw SheafError(.invalidArgument, "the body is NULL but its length is \(length)") }
        let bytes = length == 0 ? [] : Array(UnsafeRawBufferPointer(start: data, count: length))
        try handle.configure { request, form in
            request.body = .bytes(bytes, contentType: contentType)
            form = nil
        }
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_add_form(_ request: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                   _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        let field = try formField(name, value, "field")
        try handle.configure { request, form in
            request.body = nil
            form = (form ?? []) + [field]
        }
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_set_output_file(_ request: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        let path = try CString.text(path, "the path")
        if path?.isEmpty == true { throw SheafError(.invalidArgument, "the output path must not be empty") }
        try handle.setOutput(path)
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_progress(_ request: OpaquePointer?, _ outDone: UnsafeMutablePointer<Int64>?,
                                   _ outExpected: UnsafeMutablePointer<Int64>?) -> sheaf_result {
    withRequest(request) { handle in
        let (done, expected) = handle.progress
        outDone?.pointee = done
        outExpected?.pointee = expected
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_set_retry(_ request: OpaquePointer?, _ retry: Int32) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        try handle.configure { request, _ in request.retriesUnsafeMethod = retry != 0 }
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_start(_ request: OpaquePointer?, _ onDone: sheaf_request_done_fn?,
                                _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withRequest(request) { (handle) throws(SheafError) in
            // Without a callback, the user data is released once the outcome is there.
            let callback = onDone.map { DoneCallback(function: $0, userData: owned) }
            try handle.start(callback)
            return SHEAF_OK
        }
    }
}

@c @implementation
public func sheaf_request_wait(_ request: OpaquePointer?) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        guard !CallbackContext.isInsideCallback else {
            throw SheafError.blockingCallInsideCallback
        }
        return try handle.wait()
    }
}

@c @implementation
public func sheaf_request_send(_ request: OpaquePointer?) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        guard !CallbackContext.isInsideCallback else {
            throw SheafError.blockingCallInsideCallback
        }
        try handle.start(nil)
        return try handle.wait()
    }
}

@c @implementation
public func sheaf_request_cancel(_ request: OpaquePointer?) -> sheaf_result {
    withRequest(request) { handle in
        handle.cancel()
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_status(_ request: OpaquePointer?) -> Int32 {
    RequestHandle.from(request)?.response?.status ?? 0
}

@c @implementation
public func sheaf_request_url(_ request: OpaquePointer?) -> UnsafePointer<CChar>? {
    RequestHandle.from(request)?.response.map { UnsafePointer($0.url.pointer) }
}

@c @implementation
public func sheaf_request_header_count(_ request: OpaquePointer?) -> Int {
    RequestHandle.from(request)?.response?.headers.count ?? 0
}

@c @implementation
public func sheaf_request_header(_ request: OpaquePointer?, _ index: Int,
                                 _ outName: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                 _ outValue: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> sheaf_result {
    withRequest(request) { (handle) throws(SheafError) in
        let headers = handle.response?.headers ?? []
        guard headers.indices.contains(index) else {
            throw SheafError(.invalidArgument, "header index \(index) is out of range (\(headers.count) headers)")
        }
        outName?.pointee = UnsafePointer(headers[index].name.pointer)
        outValue?.pointee = UnsafePointer(headers[index].value.pointer)
        return SHEAF_OK
    }
}

@c @implementation
public func sheaf_request_header_value(_ request: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> UnsafePointer<CChar>? {
    guard let headers = RequestHandle.from(request)?.response?.headers, let name else { return nil }
    let wanted = String(cString: name).lowercased()
    return headers.first { String(cString: $0.name.pointer).lowercased() == wanted }.map { UnsafePointer($0.value.pointer) }
}

@c @implementation
public func sheaf_request_body(_ request: OpaquePointer?, _ outLength: UnsafeMutablePointer<Int>?) -> UnsafePointer<CChar>? {
    let response = RequestHandle.from(request)?.response
    outLength?.pointee = response?.bodyLength ?? 0
    return response.map { UnsafePointer($0.body) }
}

@c @implementation
public func sheaf_request_error(_ request: OpaquePointer?) -> UnsafeMutablePointer<sheaf_error>? {
    RequestHandle.from(request)?.lastError.map(cError)
}
