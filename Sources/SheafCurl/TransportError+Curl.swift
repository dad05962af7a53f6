import CCurl
import Sheaf

extension TransportError.Kind {
    /// The kind of failure a libcurl transfer result stands for. `detail` (the transfer's error
    /// text) tells apart what one code covers: a receive error is transient, response headers
    /// past libcurl's limit are not (the same answer would come again). HTTP/2 stream and
    /// framing errors are connection failures: a server rotating its connections causes them.
    init(curlCode code: CURLcode, detail: String = "") {
        if code == CURLE_RECV_ERROR, detail.contains("Too large response headers") {
            self = .other
            return
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            self = .timeout
        case CURLE_COULDNT_CONNECT, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING,
             CURLE_PARTIAL_FILE:
            self = .connect
        case CURLE_HTTP2_STREAM, CURLE_HTTP2:
            // A stream the server reset (RST_STREAM) or left unprocessed when it went away
            // (GOAWAY), or a connection whose framing broke as it closed: the request got no
            // answer, as on a reset connection, so it is asked for again (when it may be).
            self = .connect
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            self = .dns
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
             CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_PEER_FAILED_VERIFICATION,
             CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            self = .tls
        case CURLE_FILESIZE_EXCEEDED:
            self = .tooLarge
        default:
            self = .other
        }
    }
}

extension TransportError {
    /// The error for a failed libcurl transfer, with curl's own detail when it has any.
    ///
    /// `detail` is the transfer's CURLOPT_ERRORBUFFER text. Neither it nor `curl_easy_strerror`
    /// ever repeats request headers, so the message cannot leak a bearer token.
    init(curlCode code: CURLcode, detail: String) {
        let text = detail.isEmpty ? String(cString: scurl_easy_strerror(code)) : detail
        self.init(Kind(curlCode: code, detail: detail), "\(text) (curl error \(code.rawValue))")
    }
}
