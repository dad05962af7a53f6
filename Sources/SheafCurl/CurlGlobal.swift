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
