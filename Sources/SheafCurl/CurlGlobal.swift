import CCurl

/// libcurl's process-wide initialisation, performed once on first use and never undone.
enum CurlGlobal {
    /// The result of the one `curl_global_init(CURL_GLOBAL_DEFAULT)` call of this process.
    ///
    /// A static `let` is initialised lazily and exactly once, even under concurrent first use.
    /// `curl_global_cleanup` is deliberately never called: other code in the process (or another
    /// copy of Sheaf) may still be using libcurl when ours is done with it.
    static let initResult: CURLcode = curl_global_init(scurl_global_default_flags())

    /// Whether libcurl is initialised and usable; triggers the initialisation on first call.
    static var isReady: Bool { initResult == CURLE_OK }
}

extension CurlGlobal {
    /// The libcurl loaded at run time, e.g. "7.88.1".
    static let version: String = scurl_version_info().map { String(cString: $0.pointee.version) } ?? "?"

    /// Whether HTTP/2 by prior knowledge survives connection reuse: libcurl before 8.0 layers
    /// HTTP/2 twice on a reused h2c connection and fails the request with "Error in the HTTP2
    /// framing layer" (curl issue 10634, fixed in 8.0.0).
    static let priorKnowledgeWorks: Bool = scurl_version_info().map { $0.pointee.version_num >= 0x08_00_00 } ?? false
}
