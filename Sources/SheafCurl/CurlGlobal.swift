import CCurl

/// libcurl, loaded and initialised once per process on first use (by `scurl_load`, under
/// pthread_once), and never undone. Computed each time, not kept in Swift statics: pthread_once
/// is cheap after the first call, and its ordering is one ThreadSanitizer understands.
enum CurlGlobal {
    /// Why libcurl cannot be used (not installed, too old, its initialisation failed); nil when
    /// it can.
    static var failure: String? { scurl_load().map { String(cString: $0) } }

    /// Whether libcurl is loaded and initialised; loads it on the first call.
    static var isReady: Bool { scurl_load() == nil }

    /// The libcurl loaded at run time, e.g. "7.88.1" ("?" when none is).
    static var version: String { scurl_version_info().map { String(cString: $0.pointee.version) } ?? "?" }

    /// Whether HTTP/2 by prior knowledge survives connection reuse: libcurl before 8.0 layers
    /// HTTP/2 twice on a reused h2c connection and fails the request with "Error in the HTTP2
    /// framing layer" (curl issue 10634, fixed in 8.0.0).
    static var priorKnowledgeWorks: Bool { scurl_version_info().map { $0.pointee.version_num >= 0x08_00_00 } ?? false }
}
