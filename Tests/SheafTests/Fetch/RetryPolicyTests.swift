import Foundation
import XCTest
@testable import Sheaf

/// 2024-03-01 12:00:00 UTC.
private let now = Date(timeIntervalSince1970: 1_709_294_400)

/// Records the ranges the policy draws from and answers with their upper bounds.
private final class Draws {
    var ranges: [ClosedRange<Int>] = []
    func highest(_ range: ClosedRange<Int>) -> Int {
        ranges.append(range)
        return range.upperBound
    }
}

final class RetryPolicyTests: XCTestCase {
    func testServerErrorsTooManyRequestsAndRequestTimeoutAreTransient() {
        for status in [500, 502, 503, 504, 429, 408, 599] {
            XCTAssertTrue(RetryPolicy.isTransient(status: status), "\(status)")
        }
    }

    func testNotImplementedAndClientErrorsAreNotTransient() {
        for status in [501, 400, 401, 403, 404, 409, 410, 422, 200, 301, 304, 600] {
            XCTAssertFalse(RetryPolicy.isTransient(status: status), "\(status)")
        }
    }

    func testBackoffDrawsFromAFullJitterRangeThatDoublesPerAttempt() {
        let policy = RetryPolicy() // base 100 ms, cap 30 s
        let draws = Draws()
        for attempt in 1...5 {
            XCTAssertEqual(policy.delayMilliseconds(afterAttempt: attempt, retryAfter: nil, now: now, random: draws.highest),
                           100 << (attempt - 1))
        }
        XCTAssertEqual(draws.ranges, [0...100, 0...200, 0...400, 0...800, 0...1600])
    }

    func testBackoffReturnsWhatTheRandomSourceDraws() {
        let policy = RetryPolicy()
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 3, retryAfter: nil, now: now, random: { $0.lowerBound }), 0)
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 3, retryAfter: nil, now: now, random: { _ in 123 }), 123)
    }

    func testBackoffIsCappedEvenForManyAttempts() {
        var policy = RetryPolicy()
        policy.maxDelayMilliseconds = 1_000
        let draws = Draws()
        for attempt in [5, 6, 31, 64, 100, Int.max / 2] {
            XCTAssertEqual(policy.delayMilliseconds(afterAttempt: attempt, retryAfter: nil, now: now, random: draws.highest), 1_000)
        }
        XCTAssertTrue(draws.ranges.allSatisfy { $0 == 0...1_000 })
    }

    func testAHugeBaseDoesNotOverflowTheBackoff() {
        var policy = RetryPolicy()
        policy.baseDelayMilliseconds = Int.max / 4
        let draws = Draws()
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 20, retryAfter: nil, now: now, random: draws.highest), 30_000)
    }

    func testAZeroBaseNeverWaitsAndDrawsNothing() {
        var policy = RetryPolicy()
        policy.baseDelayMilliseconds = 0
        let draws = Draws()
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 3, retryAfter: nil, now: now, random: draws.highest), 0)
        XCTAssertEqual(draws.ranges, [])
    }

    func testRetryAfterInSecondsWinsOverTheBackoff() {
        let policy = RetryPolicy()
        let draws = Draws()
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: "7", now: now, random: draws.highest), 7_000)
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: "0", now: now, random: draws.highest), 0)
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: " 2 ", now: now, random: draws.highest), 2_000)
        XCTAssertEqual(draws.ranges, [])
    }

    func testRetryAfterIsCapped() {
        var policy = RetryPolicy()
        policy.maxDelayMilliseconds = 5_000
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: "3600", now: now), 5_000)
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: "Fri, 01 Mar 2024 13:00:00 GMT", now: now), 5_000)
    }

    func testRetryAfterAsAnHTTPDateCountsFromNow() {
        let policy = RetryPolicy()
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: "Fri, 01 Mar 2024 12:00:09 GMT", now: now), 9_000)
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: "Fri, 01 Mar 2024 12:00:00 GMT", now: now), 0)
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: "Fri, 01 Mar 2024 11:00:00 GMT", now: now), 0,
                       "a date in the past means now")
        // A fraction of a second before the date rounds up, so the retry never comes early.
        XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 1, retryAfter: "Fri, 01 Mar 2024 12:00:09 GMT",
                                                now: now.addingTimeInterval(0.5)), 9_000)
    }

    func testAnUnreadableRetryAfterFallsBackToTheBackoff() {
        let policy = RetryPolicy()
        for value in ["soon", "-5", "1.5", "", "Fri, 01 Mar 2024 12:00:09 PST", "Friday, 01-Mar-24 12:00:09 GMT"] {
            let draws = Draws()
            XCTAssertEqual(policy.delayMilliseconds(afterAttempt: 2, retryAfter: value, now: now, random: draws.highest), 200, value)
            XCTAssertEqual(draws.ranges, [0...200], value)
        }
    }

    func testParsesTheIMFFixdateOfRFC9110() {
        XCTAssertEqual(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT"), Date(timeIntervalSince1970: 784_111_777))
        XCTAssertEqual(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT"), Date(timeIntervalSince1970: 0))
        XCTAssertEqual(HTTPDate.parse("Thu, 29 Feb 2024 23:59:59 GMT"), Date(timeIntervalSince1970: 1_709_251_199))
    }

    func testRejectsMalformedHTTPDates() {
        for text in ["Sun, 06 Nov 1994 08:49:37", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
                     "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun 06 Nov 1994 08:49:37 GMT",
                     "Sun, 06 Nov 1969 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "Sunday, 06-Nov-94 08:49:37 GMT"] {
            XCTAssertNil(HTTPDate.parse(text), text)
        }
    }

    func testTheDefaultPolicyValidates() throws {
        XCTAssertNoThrow(try ClientConfiguration().validated())
        var configuration = ClientConfiguration()
        configuration.retry.maxAttempts = 0
        XCTAssertThrowsError(try configuration.validated()) { error in
            XCTAssertEqual((error as? SheafError)?.code, .invalidArgument)
        }
    }
}
