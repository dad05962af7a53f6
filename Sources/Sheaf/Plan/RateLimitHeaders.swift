#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What an answer's rate-limit headers say: requests left in the server's current window, and
/// when that window resets.
///
/// Read, in this order (the first present wins):
/// - `RateLimit` (IETF httpapi draft): the structured form `"name";r=50;t=30`, one member per
///   policy (the most restrictive is taken), or the earlier `limit=100, remaining=50, reset=30`;
/// - `RateLimit-Remaining` and `RateLimit-Reset` (earlier drafts; GitLab);
/// - `X-RateLimit-Remaining` and `X-RateLimit-Reset` (GitHub, and many others).
/// A reset above 10⁹ is a Unix time (GitHub, GitLab), otherwise seconds from now.
struct RateLimitHeaders: Equatable {
    /// Requests the server will still take before the reset.
    var remaining: Int
    /// Seconds until the reset, when the server said.
    var resetSeconds: Int?
    /// The requests the window allows (`X-RateLimit-Limit`, `RateLimit-Limit`), when said.
    var limit: Int? = nil
    /// Which of the server's limits this is (GitHub's `X-RateLimit-Resource`: `core`, `search`,
    /// `graphql`), for the messages.
    var resource: String? = nil

    private static let names: Set<String> = ["ratelimit", "ratelimit-remaining", "ratelimit-reset", "ratelimit-limit",
                                             "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-limit",
                                             "x-ratelimit-resource"]

    /// Reads every answer of a list: one pass over the headers.
    static func parse(_ headers: [HTTPHeader], now: Date = Date()) -> RateLimitHeaders? {
        var found: [String: String] = [:]
        for header in headers {
            let name = header.name.lowercased()
            if names.contains(name), found[name] == nil { found[name] = header.value }
        }
        guard !found.isEmpty else { return nil }
        // A name the server chose is shown in messages: printable ASCII, cut short.
        let resource = found["x-ratelimit-resource"].map { String($0.unicodeScalars.filter { $0.value > 0x20 && $0.value < 0x7F }.prefix(40).map(Character.init)) }
            .flatMap { $0.isEmpty ? nil : $0 }
        if let value = found["ratelimit"], var parsed = structured(value, now: now) {
            parsed.resource = resource
            return parsed
        }
        for prefix in ["ratelimit-", "x-ratelimit-"] {
            guard let remaining = found[prefix + "remaining"].flatMap(count) else { continue }
            return RateLimitHeaders(remaining: remaining, resetSeconds: found[prefix + "reset"].flatMap { seconds($0, now: now) },
                                    limit: found[prefix + "limit"].flatMap(count), resource: resource)
        }
        return nil
    }

    /// `"default";r=50;t=30, "burst";r=5;t=1` or `limit=100, remaining=50, reset=30`.
    private static func structured(_ value: String, now: Date) -> RateLimitHeaders? {
        var policies: [RateLimitHeaders] = []
        var loose: (remaining: Int?, reset: Int?) = (nil, nil)
        for member in value.split(separator: ",") {
            var remaining: Int?
            var reset: Int?
            for part in member.split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1).map(trimmed)
                guard pair.count == 2 else { continue }
                switch pair[0].lowercased() {
                case "r": remaining = count(pair[1])
                case "t": reset = seconds(pair[1], now: now)
                case "remaining": loose.remaining = count(pair[1])
                case "reset": loose.reset = seconds(pair[1], now: now)
                default: break
                }
            }
            if let remaining { policies.append(RateLimitHeaders(remaining: remaining, resetSeconds: reset)) }
        }
        if let remaining = loose.remaining { policies.append(RateLimitHeaders(remaining: remaining, resetSeconds: loose.reset)) }
        // The policy with the fewest requests left binds; among those, the latest reset.
        return policies.min { ($0.remaining, -($0.resetSeconds ?? 0)) < ($1.remaining, -($1.resetSeconds ?? 0)) }
    }

    /// The most a count is taken to be: a server's number, however large, is held well below
    /// where the window's sums on it (`WindowLimiter`: in flight plus what is left) could overflow.
    static let largestCount = 1 << 40

    private static func count(_ text: String) -> Int? {
        Int(trimmed(text[...])).flatMap { $0 >= 0 ? min($0, largestCount) : nil }
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    private static func seconds(_ text: String, now: Date) -> Int? {
        guard let value = count(text) else { return nil }
        guard value > 1_000_000_000 else { return value }
        return max(0, Int(min(Double(value) - now.timeIntervalSince1970, Double(Int32.max)).rounded(.up)))
    }
}
