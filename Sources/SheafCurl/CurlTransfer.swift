import CCurl
import Sheaf
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One request's record in the event loop, from the queue through libcurl to its completion.
final class CurlTransfer: @unchecked Sendable {
    // Safe to share: `request` is immutable; `state` and `completion` are only read or written
    // with the owning CurlEventLoop's lock held; every other stored property (the curl handle,
    // the header list, the error buffer and the response being collected) is only touched on the
    // loop's event thread, including from the libcurl callbacks, which run on that thread.

    /// Where a transfer is in its life; guarded by the event loop's lock.
    enum State {
        /// Waiting in the loop's queue for the event thread to pick it up.
        case queued
        /// Picked up by the event thread (its easy handle may or may not be in the multi yet).
        case active
        /// Abandoned by `cancel()`; its completion will never be called.
        case cancelled
        /// Its completion has been claimed for calling (or the transfer failed to start).
        case finished
    }

    typealias Completion = @Sendable (Result<HTTPResponse, TransportError>) -> Void

    let request: HTTPRequest
    /// Guarded by the loop's lock; taken (set to nil) by whoever claims the call.
    var completion: Completion?
    /// Guarded by the loop's lock.
    var state: State = .queued

    // Event-thread only from here on.
    private(set) var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var errorBuffer: UnsafeMutablePointer<CChar>?
    private var responseHeaders: [HTTPHeader] = []
    private var responseBody: [UInt8] = []
    private var bodyTooLarge = false
    private var sizedBody = false
    /// Whether this response's body goes to `request.sink` (decided at its first byte).
    private var streaming = false

    init(request: HTTPRequest, completion: @escaping Completion) {
        self.request = request
        self.completion = completion
    }

    deinit {
        // Normally `releaseHandle()` already ran on the event thread; this is only a safety net.
        releaseHandle()
    }

    // MARK: - Setting up

    /// Creates and configures the easy handle; returns the error when the request cannot be sent.
    func prepare(acceptEncoding: Bool) -> TransportError? {
        guard let handle = scurl_easy_init() else {
            return TransportError(.other, "curl_easy_init failed")
        }
        easy = handle
        if let problem = validate() {
            return problem
        }
        // The core sends http and https only (and libcurl is restricted to them below).
        let cleartext = request.url.prefix(5).lowercased() == "http:"
        if request.httpVersion == .http2PriorKnowledge, cleartext, !CurlGlobal.priorKnowledgeWorks {
            return TransportError(.other, "HTTP/2 by prior knowledge on http:// needs libcurl 8.0 or later: "
                                  + "libcurl \(CurlGlobal.version) fails every request on a reused HTTP/2 connection")
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        buffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        errorBuffer = buffer

        var code = CURLE_OK
        func set(_ result: CURLcode) {
            if code == CURLE_OK { code = result }
        }
        let me = Unmanaged.passUnretained(self).toOpaque()

        set(scurl_easy_setopt_ptr(handle, CURLOPT_ERRORBUFFER, buffer))
        set(request.url.withCString { scurl_easy_setopt_ptr(handle, CURLOPT_URL, $0) })  // copied
        set(scurl_easy_restrict_to_http(handle))
        set(scurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        set(scurl_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        set(scurl_easy_setopt_long(handle, CURLOPT_TCP_NODELAY, 1))
        if !request.mayResend {
            // libcurl sends a request again, on a fresh connection, when the reused connection it
            // went out on closes before any answer ("Connection died, retrying a fresh connect"),
            // whatever the method: the server may have read it and acted. On a connection of its
            // own that retry never happens; other requests keep reusing connections.
            set(scurl_easy_setopt_long(handle, CURLOPT_FRESH_CONNECT, 1))
        }
        // Cancelling (or closing) during a DNS lookup must not block the event thread until the
        // resolver thread returns; with this, curl detaches that thread instead of joining it.
        set(scurl_easy_allow_quick_exit(handle))
        if request.timeoutMilliseconds > 0 {
            set(scurl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, request.timeoutMilliseconds))
        }
        if request.connectTimeoutMilliseconds > 0 {
            set(scurl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS,
                                       request.connectTimeoutMilliseconds))
        }
        if request.stallTimeoutMilliseconds > 0 {
            set(scurl_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1))
            set(scurl_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, request.stallTimeoutMilliseconds / 1000)))
        }
        if request.maxBodyBytes > 0, request.sink == nil {
            // Fails early when the server announces a larger Content-Length; the write callback
            // enforces the cap on bodies of unknown length (and on decoded bodies).
            set(scurl_easy_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxBodyBytes)))
        }
        if request.sink != nil {
            // A download goes to a sink a chunk at a time: libcurl's default 16 KiB buffer makes
            // one callback and one write(2) per 16 KiB; curl's own tool reads 100 KiB at a time.
            set(scurl_easy_setopt_long(handle, CURLOPT_BUFFERSIZE, Self.downloadBufferBytes))
        }
        switch request.httpVersion {
        case .automatic, .http2PriorKnowledge:
            let version = request.httpVersion == .automatic ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
            set(scurl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(version)))
            if request.httpVersion == .http2PriorKnowledge || !cleartext {
                // Where the connection may turn out to be HTTP/2, requests started together wait
                // for the origin's first connection instead of opening one each: over HTTP/2 the
                // whole window then shares it (over HTTP/1.1 they open their own once it answers).
                set(scurl_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1))
            }
        case .http1_1:
            set(scurl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)))
        }
        if acceptEncoding, request.sink == nil {
            set("".withCString { scurl_easy_setopt_ptr(handle, CURLOPT_ACCEPT_ENCODING, $0) })
        }
        if request.sink != nil {
            // A download saves the bytes as served, compression offered or not: a decoded body has
            // no bound of its own (a 261 KB gzip answer decodes to 256 MiB), and Range, If-Range
            // and Content-Length all count the encoded bytes a resumed download must continue.
            set(scurl_easy_setopt_long(handle, CURLOPT_HTTP_CONTENT_DECODING, 0))
        }
        for (option, path) in Self.tlsFiles(request.tls) {
            set(path.withCString { scurl_easy_setopt_ptr(handle, option, $0) })  // copied
        }
        if request.tls.insecure {
            set(scurl_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0))
            set(scurl_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0))
        }
        set(scurl_easy_setopt_write(handle) { data, size, count, user in
            Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
                .receiveBody(data, length: size * count)
        })
        set(scurl_easy_setopt_ptr(handle, CURLOPT_WRITEDATA, me))
        set(scurl_easy_setopt_header(handle) { data, size, count, user in
            Unmanaged<CurlTransfer>.fromOpaque(user!).takeUnretainedValue()
                .receiveHeaderLine(data, length: size * count)
        })
        set(scurl_easy_setopt_ptr(handle, CURLOPT_HEADERDATA, me))
        set(configureMethodAndBody(handle))

        var list: UnsafeMutablePointer<curl_slist>?
        var sawExpect = false
        for header in request.headers {
            // "Name;" is curl's spelling of a header with an empty value.
            let line = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
            if header.name.lowercased() == "expect" { sawExpect = true }
            guard let longer = scurl_slist_append(list, line) else {
                scurl_slist_free_all(list)
                return TransportError(.other, "out of memory building request headers")
            }
            list = longer
        }
        if !sawExpect && request.method != "GET" && request.method != "HEAD" {
            // No "Expect: 100-continue" round trip before a body.
            list = scurl_slist_append(list, "Expect:") ?? list
        }
        headerList = list
        if let list {
            set(scurl_easy_setopt_ptr(handle, CURLOPT_HTTPHEADER, list))
        }

        guard code == CURLE_OK else {
            return TransportError(.other, "cannot configure the request: \(String(cString: scurl_easy_strerror(code)))")
        }
        return nil
    }

    /// Rejects what would corrupt the request line or smuggle header lines; never quotes values.
    /// The TLS files to hand to libcurl: the client's, else the OpenSSL convention's
    /// $SSL_CERT_FILE and $SSL_CERT_DIR (which libcurl's built-in CA path would otherwise ignore).
    private static func tlsFiles(_ tls: TLSSettings) -> [(CURLoption, String)] {
        func environment(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let caFile = tls.caFile ?? (tls.caDirectory == nil ? environment("SSL_CERT_FILE") : nil)
        let caDirectory = tls.caDirectory ?? (tls.caFile == nil ? environment("SSL_CERT_DIR") : nil)
        return [(CURLOPT_CAINFO, caFile), (CURLOPT_CAPATH, caDirectory), (CURLOPT_SSLCERT, tls.certificate),
                (CURLOPT_SSLKEY, tls.privateKey)].compactMap { option, path in path.map { (option, $0) } }
    }

    private func validate() -> TransportError? {
        func clean(_ text: String) -> Bool {
            !text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
        }
        if request.method.isEmpty || !request.method.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            return TransportError(.other, "invalid request method")
        }
        if !clean(request.url) {
            return TransportError(.other, "invalid request URL")
        }
        for header in request.headers {
            let nameOK = !header.name.isEmpty
                && header.name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
            if !nameOK || !clean(header.value) {
                // The name is safe to repeat only when it is valid; the value never is.
                return TransportError(.other, nameOK ? "invalid value for request header \(header.name)"
                                                     : "invalid request header name")
            }
        }
        return nil
    }

    private func configureMethodAndBody(_ handle: UnsafeMutableRawPointer) -> CURLcode {
        switch request.method {
        case "GET":
            return scurl_easy_setopt_long(handle, CURLOPT_HTTPGET, 1)
        case "HEAD":
            return scurl_easy_setopt_long(handle, CURLOPT_NOBODY, 1)
        default:
            let sendsBody = !request.body.isEmpty
                || ["POST", "PUT", "PATCH"].contains(request.method)
            if sendsBody {
                var code = scurl_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
                guard code == CURLE_OK else { return code }
                // COPYPOSTFIELDS copies the bytes, so the array need not outlive this call.
                code = request.body.withUnsafeBytes { raw in
                    if let bytes = raw.baseAddress, !raw.isEmpty {
                        return scurl_easy_setopt_ptr(handle, CURLOPT_COPYPOSTFIELDS, bytes)
                    }
                    return "".withCString { scurl_easy_setopt_ptr(handle, CURLOPT_COPYPOSTFIELDS, $0) }
                }
                guard code == CURLE_OK else { return code }
            }
            if request.method == "POST" && sendsBody {
                return CURLE_OK
            }
            return request.method.withCString { scurl_easy_setopt_ptr(handle, CURLOPT_CUSTOMREQUEST, $0) }
        }
    }

    // MARK: - libcurl callbacks (event thread)

    /// The most memory reserved on the strength of a Content-Length header alone.
    static let reserveLimit: curl_off_t = 16 << 20
    /// libcurl's receive buffer for downloads (its ceiling is 512 KiB before 7.88 and 10 MiB since).
    static let downloadBufferBytes = 512 << 10

    private func receiveBody(_ data: UnsafeMutablePointer<CChar>?, length: Int) -> Int {
        guard length > 0, let data else { return 0 }
        if !sizedBody, let sink = request.sink, let easy {
            var status = 0
            _ = scurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            streaming = sink.begin(status: status, headers: responseHeaders)
        }
        if streaming {
            sizedBody = true
            // Anything but `length` makes curl abort with CURLE_WRITE_ERROR; the sink keeps why.
            return request.sink!.write(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
        }
        if responseBody.count + length > request.maxBodyBytes {
            bodyTooLarge = true
            return 0  // anything but `length` makes curl abort with CURLE_WRITE_ERROR
        }
        if !sizedBody {
            sizedBody = true
            var announced: curl_off_t = -1
            if let easy, scurl_easy_getinfo_off(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced) == CURLE_OK,
               announced > 0 {
                // The server's Content-Length is a claim: reserve at most what a page plausibly
                // needs up front and let a larger body grow as it really arrives.
                responseBody.reserveCapacity(Int(min(announced, curl_off_t(request.maxBodyBytes), Self.reserveLimit)))
            }
        }
        responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
        return length
    }

    private func receiveHeaderLine(_ data: UnsafeMutablePointer<CChar>?, length: Int) -> Int {
        guard length > 0, let data else { return length }
        var bytes = UnsafeRawBufferPointer(start: data, count: length)[...]
        while let last = bytes.last, last == 0x0D || last == 0x0A { bytes = bytes.dropLast() }
        if bytes.isEmpty {
            return length  // the blank line ending a header block
        }
        if bytes.starts(with: "HTTP/".utf8) {
            // A new status line: an interim (1xx) or proxy response came before; keep only the last.
            responseHeaders.removeAll(keepingCapacity: true)
            return length
        }
        let isBlank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        if let first = bytes.first, isBlank(first) {
            // An obsolete folded continuation of the previous header's value.
            if !responseHeaders.isEmpty {
                let more = String(decoding: bytes.drop(while: isBlank), as: UTF8.self)
                responseHeaders[responseHeaders.count - 1].value += " " + more
            }
            return length
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else {
            return length  // not a header line; ignore it
        }
        var name = bytes[..<colon]
        while let last = name.last, isBlank(last) { name = name.dropLast() }
        var value = bytes[(colon + 1)...].drop(while: isBlank)
        while let last = value.last, isBlank(last) { value = value.dropLast() }
        responseHeaders.append(HTTPHeader(name: String(decoding: name, as: UTF8.self),
                                          value: String(decoding: value, as: UTF8.self)))
        return length
    }

    // MARK: - Finishing

    /// The outcome of the finished transfer, given libcurl's result code.
    func outcome(_ code: CURLcode) -> Result<HTTPResponse, TransportError> {
        if bodyTooLarge || code == CURLE_FILESIZE_EXCEEDED {
            return .failure(TransportError(.tooLarge, "response body exceeds \(request.maxBodyBytes) bytes"))
        }
        guard code == CURLE_OK else {
            let detail = errorBuffer.map { String(cString: $0) } ?? ""
            return .failure(TransportError(curlCode: code, detail: detail))
        }
        var status = 0
        if let easy {
            _ = scurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        }
        var response = HTTPResponse(status: status, headers: responseHeaders, body: responseBody)
        response.bodyStreamed = streaming
        responseHeaders = []
        responseBody = []
        return .success(response)
    }

    /// Frees the easy handle and everything it points at; the handle must no longer be in a multi.
    func releaseHandle() {
        if let easy {
            scurl_easy_cleanup(easy)
            self.easy = nil
        }
        if let headerList {
            scurl_slist_free_all(headerList)
            self.headerList = nil
        }
        if let errorBuffer {
            errorBuffer.deallocate()
            self.errorBuffer = nil
        }
        responseHeaders = []
        responseBody = []
    }
}
