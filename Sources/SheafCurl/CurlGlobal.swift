import CCurl

/// libcurl, loaded (see CCurl.h) and initialised once on first use, and never undone.
enum CurlGlobal {
    /// Why libcurl cannot be used (not installed, too old, its initialisation failed); nil when
    /// it can. A static `let` is initialised lazily and exactly once, even under concurrent first
    /// use. `curl_global_cleanup` is deliberately never called: other code in the process (or
    /// another copy of Sheaf) may still be using libcurl when ours is done with it.
    static let failure: String? = {
        if let reason = scurl_load() { return String(cString: reason) }
        let result = scurl_global_init(scurl_global_default_flags())
        return result == CURLE_OK ? nil : "curl_global_init failed (curl error \(result.rawValue))"
    }()

    /// Whether libcurl is loaded and initialised; loads it on the first call.
    static var isReady: Bool { failure == nil }

    /// The libcurl loaded at run time, e.g. "7.88.1" ("?" when none is).
    static let version: String = scurl_version_info().map { String(cString: $0.pointee.version) } ?? "?"

    /// Whether HTTP/2 by prior knowledge survives connection reuse: libcurl before 8.0 layers
    /// HTTP/2 twice on a reused h2c connection and fails the request with "Error in the HTTP2
    /// framing layer" (curl issue 10634, fixed in 8.0.0).
    static let priorKnowledgeWorks: Bool = scurl_version_info().map { $0.pointee.version_num >= 0x08_00_00 } ?? false
}
