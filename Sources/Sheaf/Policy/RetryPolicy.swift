#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When and how long to wait before another attempt of an idempotent request.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts including the first.
    public var maxAttempts = 4
    /// The backoff base; attempt n waits a random time in [0, min(max, base × 2ⁿ⁻¹)] (full jitter).
    public var baseDelayMilliseconds = 100
    /// The cap on any wait, Retry-After included.
    public var maxDelayMilliseconds = 30_000

    public init() {}

    /// Whether an answer with `status` deserves another attempt: 5xx but 501, 429 and 408.
    public static func isTransient(status: Int) -> Bool {
        (status >= 500 && status <= 599 && status != 501) || status == 429 || status == 408
    }

    /// The wait before attempt `attempt + 1`, after `attempt` attempts failed (attempt ≥ 1).
    /// A `Retry-After` value (seconds or an HTTP date) wins over the backoff, within the cap.
    func delayMilliseconds(afterAttempt attempt: Int, retryAfter: String?, now: Date = Date(),
                           random: (ClosedRange<Int>) -> Int = { Int.random(in: $0) }) -> Int {
        if let retryAfter, let seconds = Self.parseRetryAfter(retryAfter, now: now) {
            // Compared in seconds first: seconds × 1000 may overflow.
            return seconds > maxDelayMilliseconds / 1000 ? maxDelayMilliseconds : seconds * 1000
        }
        let exponent = min(attempt - 1, 30)
        let ceiling = min(maxDelayMilliseconds, baseDelayMilliseconds.multipliedReportingOverflow(by: 1 << exponent).overflow
                          ? maxDelayMilliseconds : baseDelayMilliseconds << exponent)
        return ceiling <= 0 ? 0 : random(0...ceiling)
    }

    /// Seconds to wait from a Retry-After value: delta-seconds, or an IMF-fixdate (RFC 9110 §10.2.3).
    static func parseRetryAfter(_ value: String, now: Date) -> Int? {
        let text = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        if let seconds = Int(text), seconds >= 0 { return seconds }
        guard let date = HTTPDate.parse(text) else { return nil }
        return Int(max(0, min(date.timeIntervalSince(now).rounded(.up), Double(Int32.max))))
    }
}

/// Parses the preferred HTTP date format, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", parts[0].hasSuffix(","),
              let day = Int(parts[1]), (1...31).contains(day),
              let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
                .firstIndex(of: String(parts[2])).map({ $0 + 1 }),
              let year = Int(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2])
        else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm), then seconds since 1970.
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
