import XCTest
@testable import Sheaf

private let url = "https://api.example.com/v1/things?page=2"

private func policy(attempts: Int = 4, maxBody: Int = 1000, maxRedirects: Int = 2, secret: String = "s3cret") -> AnswerPolicy {
    var configuration = ClientConfiguration()
    configuration.retry.maxAttempts = attempts
    configuration.maxBodyBytes = maxBody
    configuration.maxRedirects = maxRedirects
    return AnswerPolicy(configuration, redactor: Redactor([secret]))
}

private func answer(_ status: Int, _ headers: [(String, String)] = [], body: String = "") -> Result<HTTPResponse, TransportError> {
    .success(HTTPResponse(status: status, headers: headers.map { HTTPHeader(name: $0.0, value: $0.1) }, body: Array(body.utf8)))
}

/// The decision with a backoff that waits 100 ms per attempt, or Retry-After's seconds.
private func decide(_ policy: AnswerPolicy, _ result: Result<HTTPResponse, TransportError>, attempt: Int = 1,
                    redirects: Int = 0) -> AnswerPolicy.Decision {
    policy.decide(result, url: url, attempt: attempt, redirects: redirects) { attempt, retryAfter in
        retryAfter.flatMap { Int($0) }.map { $0 * 1000 } ?? attempt * 100
    }
}

private extension AnswerPolicy.Decision {
    var error: SheafError? {
        if case .fail(let error) = self { return error }
        return nil
    }
}

final class AnswerPolicyTests: XCTestCase {
    func testA2xxAnswerIsDeliveredAndAnythingOverTheBodyCapIsNot() {
        XCTAssertEqual(decide(policy(), answer(200, body: "[]")), .deliver(HTTPResponse(status: 200, body: Array("[]".utf8))))
        XCTAssertEqual(decide(policy(), answer(204)), .deliver(HTTPResponse(status: 204)))
        XCTAssertEqual(decide(policy(maxBody: 3), answer(200, body: "[1,2]")).error?.code, .bodyTooLarge)
        XCTAssertEqual(decide(policy(), .failure(TransportError(.tooLarge, "cap"))).error?.code, .bodyTooLarge)
    }

    func testTransientStatusesAreRetriedWhileAttemptsRemainThenFailWithTheCount() {
        for status in [500, 502, 503, 504, 429, 408] {
            XCTAssertEqual(decide(policy(), answer(status), attempt: 2), .retry(afterMilliseconds: 200), "\(status)")
            let last = decide(policy(), answer(status, body: #"{"error":"busy"}"#), attempt: 4).error
            XCTAssertEqual(last?.code, .http, "\(status)")
            XCTAssertEqual(last?.httpStatus, status)
            XCTAssertTrue(last?.message.contains("after 4 attempts") == true, last?.message ?? "")
        }
        XCTAssertEqual(decide(policy(), answer(503, [("Retry-After", "7")])), .retry(afterMilliseconds: 7000))
    }

    /// GitHub's primary limit: 403 (or 429) with X-RateLimit-Remaining: 0 is a spent quota, tried
    /// again once the window lets it (`WindowLimiter.take` waits or finds it spent), never a
    /// refused credential; with no attempt left it is `.rateLimited`, naming the limit.
    func testARefusalThatSaysTheQuotaIsSpentIsRateLimitedNotABadCredential() {
        let spent = [("X-RateLimit-Limit", "5000"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "120"),
                     ("X-RateLimit-Resource", "core")]
        for status in [403, 429] {
            XCTAssertEqual(decide(policy(), answer(status, spent)), .retry(afterMilliseconds: 0), "\(status)")
            let last = decide(policy(), answer(status, spent), attempt: 4).error
            XCTAssertEqual(last?.code, .rateLimited)
            XCTAssertEqual(last?.httpStatus, status)
            XCTAssertTrue(last?.message.contains("the server's core limit of 5000 requests is spent (HTTP \(status)): 0 left until it resets in 120 s") == true,
                          last?.message ?? "")
        }
        // A secondary limit (403 with Retry-After) backs off; a 403 that says nothing of a limit is the server's refusal.
        XCTAssertEqual(decide(policy(), answer(403, [("Retry-After", "3")])), .retry(afterMilliseconds: 3000))
        XCTAssertEqual(decide(policy(), answer(403, [("X-RateLimit-Remaining", "12")])).error?.code, .http)
        XCTAssertEqual(decide(policy(), answer(403)).error?.code, .http)
    }

    func testStatusesThatWillNotChangeFailAtOnce() {
        for status in [400, 401, 403, 404, 410, 422, 501] {
            XCTAssertEqual(decide(policy(), answer(status)).error?.httpStatus, status, "\(status)")
        }
        XCTAssertEqual(decide(policy(), answer(404)).error?.message, "\(url): HTTP 404")
    }

    func testTransportFailuresAreRetriedWhenTransientOnly() {
        XCTAssertEqual(decide(policy(), .failure(TransportError(.timeout, "slow")), attempt: 1), .retry(afterMilliseconds: 100))
        XCTAssertEqual(decide(policy(), .failure(TransportError(.connect, "refused")), attempt: 3), .retry(afterMilliseconds: 300))
        XCTAssertEqual(decide(policy(), .failure(TransportError(.connect, "refused")), attempt: 4).error?.code, .transport)
        for kind in [TransportError.Kind.dns, .tls, .other] {
            XCTAssertEqual(decide(policy(), .failure(TransportError(kind, "no")), attempt: 1).error?.code, .transport)
        }
    }

    func testRedirectsAreFollowedUpToTheCapAndNeedALocation() {
        XCTAssertEqual(decide(policy(), answer(302, [("Location", "/v2/things?page=2")])),
                       .redirect(to: "https://api.example.com/v2/things?page=2", method: "GET"))
        XCTAssertEqual(decide(policy(), answer(308, [("Location", "https://other.example/x")]), redirects: 1),
                       .redirect(to: "https://other.example/x", method: "GET"), "the origin is checked when the request is built")
        let tooMany = decide(policy(maxRedirects: 2), answer(301, [("Location", "/x")]), redirects: 2).error
        XCTAssertEqual(tooMany?.code, .http)
        XCTAssertTrue(tooMany?.message.contains("more than 2 redirects") == true)
        XCTAssertEqual(decide(policy(), answer(302)).error?.httpStatus, 302)
        XCTAssertEqual(decide(policy(), answer(302, [("Location", "ftp://x/")])).error?.httpStatus, 302)
    }

    func testTheServersErrorTextIsKeptAndTheCredentialRemoved() {
        let error = decide(policy(), answer(401, body: #"{"error":{"message":"bad token s3cret"}}"#)).error
        XCTAssertEqual(error?.serverMessage, "error.message: bad token <redacted>")
        XCTAssertFalse(error?.bodyExcerpt?.contains("s3cret") ?? true)
    }
}
