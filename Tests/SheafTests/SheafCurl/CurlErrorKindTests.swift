import CCurl
import XCTest
import Sheaf
@testable import SheafCurl

/// Which libcurl results a list asks for again: the kinds `TransportError.Kind.isTransient` retries.
final class CurlErrorKindTests: XCTestCase {
    func testAResetOrRefusedConnectionIsTransient() {
        for code in [CURLE_COULDNT_CONNECT, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING] {
            XCTAssertEqual(TransportError.Kind(curlCode: code), .connect, "curl error \(code.rawValue)")
        }
    }

    func testAnHTTP2StreamResetOrAConnectionGoneAwayIsTransientLikeAResetConnection() {
        // 92: RST_STREAM, or a GOAWAY that left the stream unprocessed; 16: the connection's
        // framing failed (a server that went away mid-stream). The request never got an answer.
        XCTAssertEqual(TransportError.Kind(curlCode: CURLE_HTTP2_STREAM), .connect)
        XCTAssertEqual(TransportError.Kind(curlCode: CURLE_HTTP2), .connect)
        XCTAssertTrue(TransportError(curlCode: CURLE_HTTP2_STREAM, detail: "HTTP/2 stream 9 was not closed cleanly").kind.isTransient)
    }

    func testResponseHeadersPastTheLimitAreNotTransient() {
        XCTAssertEqual(TransportError.Kind(curlCode: CURLE_RECV_ERROR, detail: "Too large response headers: 300000 > 100000"), .other)
    }
}
