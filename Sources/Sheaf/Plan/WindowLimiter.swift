import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How many requests to one origin are in flight: a window that finds what the server can take
/// (`OriginPace` holds one per origin a client sends to).
/// Pure: answers and the clock come in as values, decisions come out, so every rule is tested
/// without a server.
///
/// - **Growth.** It starts at the configured window and grows while latency holds: by three per
///   answer at first (four times the window each round trip: a slow start twice as steep as
///   TCP's, which reaches 64 from 8 in a round trip and a half rather than three), then by one
///   per window of answers, never above the maximum.
/// - **Latency.** The queue the client builds at the server is estimated as TCP Vegas does,
///   `window × (1 − best latency / standing latency)`, where the standing latency is the least
///   of the last half round trip's answers (Copa's): a queue slows every answer, a server busy
///   for a moment only some. Past a few requests of queue the window shrinks to what the
///   answers say the server serves at once (the requests in flight × best latency / standing
///   latency), at most once per round trip, and never below where it started: latency alone
///   only undoes growth. While latency holds again, the window grows back about halfway to
///   where it was cut from each round trip (BIC's binary search): the level worked until just
///   now, and growth by one would take dozens of round trips to get there. A real queue cuts
///   it again, and the next regrowth aims at that lower level.
/// - **Refusals.** A 429, 503 or 504, or a timeout, to a request sent while `n` requests were
///   in flight (counted at its send: those sent after it are no part of it) says the server
///   takes fewer than `n`: the window drops to `n − 1` (down to 1).
///   Reaching `n` again waits for a number of good answers (4 windows' worth at first) that
///   doubles with each refusal, up to 256, so refusals stay rare, and halves with each step
///   the server takes, so a stray refusal is forgotten.
/// - **The server's word.** `Retry-After` on a refusal holds every new request back for that long;
///   rate-limit headers (`RateLimit`, `X-RateLimit-Remaining`/`-Reset`) bound the window by the
///   requests left, and hold requests back until the reset when none are (within the retry cap).
/// A fixed window keeps its size and still obeys the server's word.
struct WindowLimiter {
    /// One answer (or failure) of one attempt.
    struct Answer: Equatable {
        enum Kind: Equatable {
            /// A 2xx: its latency counts.
            case ok
            /// The server is over its capacity: 429, 503, 504 or a timeout.
            case refused
            /// Anything else (a 404, a 500, a connection refused): says nothing of capacity.
            case other
        }

        var kind: Kind
        /// When the attempt was sent, and how long until its answer (nanoseconds of one clock).
        var sentAt: UInt64
        var latency: UInt64
        /// The requests to the origin in flight while it was, itself included (the most of
        /// those at its send and at its answer).
        var inFlight: Int
        /// Those in flight at its send, itself included: all a server could have had from the
        /// client when it came (a request sent in a burst after it reached the server after it).
        /// What a refusal is counted at. Nil: `inFlight`.
        var inFlightAtSend: Int? = nil
        /// A refusal's Retry-After, in milliseconds (within the retry cap).
        var retryAfterMilliseconds: Int? = nil
        var rateLimit: RateLimitHeaders? = nil
        /// The origin's requests sent before this one (`WindowLimiter.sent` counts them).
        var sentBefore = 0
        /// The request's route (`WindowLimiter.route(of:)`): which of the server's limits its
        /// answer speaks of is learned by it.
        var route = ""
    }

    /// Why the window changed, for the log.
    enum Reason: Equatable {
        case latencyHolds
        case latencyRose
        case refused(inFlight: Int)
    }

    /// The most good answers a try past a refused level waits for.
    static let longestProbeWait = 256
    /// What one good answer adds to the window in the slow start. Doubling each round trip
    /// (TCP's 1) takes three round trips from 8 to 64, and a list of a few hundred pages is only
    /// six or seven round trips long: the ramp was a third of its time. A steeper start
    /// overshoots a server that queues by at most four times its capacity for one round trip
    /// (its latency then cuts the window back), and one that refuses answers the first excess
    /// request at once.
    static let slowStartGain = 3

    let adaptive: Bool
    /// Where it starts; latency never takes it below.
    let start: Int
    let maximum: Int
    /// The longest the server's word may hold requests back (the retry cap), in milliseconds.
    let longestPauseMilliseconds: Int
    /// The longest a spent rate limit is waited for (`ClientConfiguration.maxWaitMilliseconds`):
    /// one that resets later is `spent`, and nothing more is sent.
    let longestQuotaWaitMilliseconds: Int
    private(set) var window: Int
    /// Nothing new is sent before this time (Retry-After, or a rate limit spent until its reset).
    private(set) var pausedUntil: UInt64 = 0
    /// Latencies of good answers: the best seen and a moving average, in nanoseconds.
    private(set) var best: UInt64?
    private(set) var average: Double = 0
    private var slowStart = true
    /// Growth per window of answers, accumulated.
    private var growth = 0.0
    /// The window a latency cut came from, while the window grows back to it.
    private var regain: Int?
    /// The good answers of about the last half round trip: when each came, and its latency.
    private var recent: [(at: UInt64, latency: UInt64)] = []
    /// The last time the window shrank: answers to requests sent before it say nothing new.
    private var lastCut: UInt64 = 0
    /// After a refusal: the fewest requests in flight the server refused, the good answers the
    /// last refusal asked for before the window reaches it again (doubled by the next one), the
    /// good answers the next step waits for (halved by each step taken), and the good answers since.
    private var refusedAt: Int?
    private var probeAfter = 0
    private var stepAfter = 0
    private var sinceProbe = 0
    /// Requests to the origin sent so far.
    private(set) var sends = 0
    /// One of the server's rate limits (GitHub's `core`, `search`, `graphql`: its
    /// `X-RateLimit-Resource`; one named "" when the server names none).
    private struct Quota {
        /// Requests left until `until`: the fewest the server's rate-limit headers said in this
        /// window of the server's, less the requests sent since (answers in flight carry counts
        /// that are already stale).
        var allowance: (remaining: Int, until: UInt64)?
        /// What the last rate-limit headers said of the limit (its size and name), for `spent`.
        var lastLimit: RateLimitHeaders?
        /// The latest request sent whose answer carried a count (its `sentBefore`), and the
        /// fewest left any answer said in the server's current window: once every request sent
        /// is answered, the server's own count of all of them.
        var newestAnswered = -1
        var fewestSaid: Int?
    }
    /// The server's limits by name, and the limit each route's answers named: a spent search
    /// limit holds back the search requests, not the others.
    private var quotas: [String: Quota] = [:]
    private var limitOfRoute: [String: String] = [:]

    init(adaptive: Bool, start: Int, maximum: Int, longestPauseMilliseconds: Int,
         longestQuotaWaitMilliseconds: Int = ClientConfiguration.defaultMaxWaitMilliseconds) {
        self.adaptive = adaptive
        self.maximum = max(1, maximum)
        self.start = min(max(1, start), self.maximum)
        // Bounded before they are multiplied into nanoseconds (a retry cap may be any Int).
        self.longestPauseMilliseconds = min(max(0, longestPauseMilliseconds), Int(Int32.max))
        self.longestQuotaWaitMilliseconds = min(max(0, longestQuotaWaitMilliseconds), Int(Int32.max))
        window = self.start
    }

    /// A rate limit with nothing left until a reset further off than the client waits for.
    struct Spent: Equatable {
        /// Milliseconds until the reset.
        var resetsIn: Int
        var limit: Int?
        var resource: String?
    }

    /// What a request about to go to the transport may do (`take`).
    enum Permit: Equatable {
        /// Go: the requests sent before it (the answer's `sentBefore`).
        case send(sentBefore: Int)
        /// Wait this many milliseconds first (a Retry-After; the answers of requests in flight).
        case wait(milliseconds: Int)
        /// Nothing is left until the limit's reset this many milliseconds away, within the
        /// longest wait: wait for it.
        case waitForReset(milliseconds: Int)
        /// Nothing is left of the server's rate limit until after the longest wait.
        case spent(Spent)
    }

    /// The route of `url` for the rate limits: its path's first segment (GitHub's `/search/...`,
    /// `/graphql`, `/repos/...`), or "" for none.
    static func route(of url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return "" }
        let afterHost = url[scheme.upperBound...].drop { $0 != "/" && $0 != "?" && $0 != "#" }
        guard afterHost.first == "/" else { return "" }
        return String(afterHost.dropFirst().prefix { $0 != "/" && $0 != "?" && $0 != "#" }.prefix(64))
    }

    /// The limit a request of `route` counts against: the one its route's answers named; for a
    /// route not answered yet, the limit the server left unnamed (one for everything), and none
    /// when it names its limits: the answer says which (a new route's request is not held back
    /// by the search limit of another).
    private func limitName(of route: String) -> String? {
        limitOfRoute[route] ?? (quotas[""] != nil ? "" : nil)
    }

    /// What the server's rate limit of `route` has left at `now` (less the requests sent since
    /// it said) and the nanoseconds until it resets; nil when it said nothing, or its reset has
    /// passed. Once every request sent is answered, the fewest any answer said is the server's
    /// own count. A route of nil: the limit with the fewest left.
    func quota(at now: UInt64, route: String? = nil) -> (remaining: Int, resetsIn: UInt64)? {
        let names = route.map { limitName(of: $0).map { [$0] } ?? [] } ?? Array(quotas.keys)
        return names.compactMap { name -> (remaining: Int, resetsIn: UInt64)? in
            guard let quota = quotas[name], let allowance = quota.allowance, now < allowance.until else { return nil }
            let settled = quota.newestAnswered == sends - 1 ? quota.fewestSaid : nil
            return (settled ?? allowance.remaining, allowance.until - now)
        }.min { $0.remaining < $1.remaining }
    }

    /// Whether the request about to be sent at `now` goes, waits, or finds the limit spent;
    /// a request that goes is counted (`sent`). One decision under the origin's lock: however
    /// many requests are admitted at once, no more go than the server said are left.
    ///
    /// The count left is kept low (an answer's count, less every request sent after it, some of
    /// which the server may have counted already), so it can reach 0 with points still left.
    /// While `othersInFlight` are at the server their answers may say so: the request waits for
    /// them (a round trip). Once every request sent is answered, the answer to the last one is
    /// the server's own count: that many go on.
    mutating func take(at now: UInt64, othersInFlight: Int = 0, route: String = "") -> Permit {
        let paused = pause(at: now)
        if paused > 0 { return .wait(milliseconds: paused) }
        guard let name = limitName(of: route), var quota = quotas[name], let allowance = quota.allowance,
              now < allowance.until, allowance.remaining == 0 else {
            return .send(sentBefore: sent(at: now, route: route))
        }
        if othersInFlight > 0 {
            return .wait(milliseconds: Int(min(max(average, 1_000_000) / 1_000_000, 100)) + 1)
        }
        if quota.newestAnswered == sends - 1, let fewestSaid = quota.fewestSaid, fewestSaid > 0 {
            quota.allowance = (fewestSaid, allowance.until)
            quotas[name] = quota
            return .send(sentBefore: sent(at: now, route: route))
        }
        let milliseconds = Int(min((allowance.until - now) / 1_000_000, UInt64(Int32.max))) + 1
        guard milliseconds <= longestQuotaWaitMilliseconds else {
            return .spent(Spent(resetsIn: milliseconds, limit: quota.lastLimit?.limit, resource: quota.lastLimit?.resource))
        }
        return .waitForReset(milliseconds: milliseconds)
    }

    /// The requests the origin may have in flight at `now`, with `inFlight` requests at the
    /// transport: the window, within the requests the server's rate limits leave (the most any
    /// of them leaves: `take` holds each request to its own; never 0 with nothing in flight: the
    /// server's answer then says what to do).
    func current(at now: UInt64, inFlight: Int = 0) -> Int {
        let left = quotas.values.compactMap { quota -> Int? in
            guard let allowance = quota.allowance, now < allowance.until else { return nil }
            return allowance.remaining
        }
        guard left.count == quotas.count, let most = left.max() else { return window } // a limit without a count: the window
        return max(inFlight == 0 ? 1 : 0, min(window, inFlight + most))
    }

    /// Whether a request may go to the transport at `now`, with `inFlight` there already.
    func hasRoom(at now: UInt64, inFlight: Int) -> Bool {
        inFlight < current(at: now, inFlight: inFlight)
    }

    /// A request to the origin was sent at `now`: one less left of a rate limit. Returns the
    /// requests sent before it (the answer's `sentBefore`).
    @discardableResult
    mutating func sent(at now: UInt64, route: String = "") -> Int {
        defer { sends += 1 }
        if let name = limitName(of: route), let allowance = quotas[name]?.allowance, now < allowance.until {
            quotas[name]?.allowance = (max(0, allowance.remaining - 1), allowance.until)
        }
        return sends
    }

    /// How long a request about to be sent at `now` waits first; 0 for none.
    func pause(at now: UInt64) -> Int {
        pausedUntil > now ? Int((pausedUntil - now) / 1_000_000) + 1 : 0
    }

    /// Takes in one answer received at `now`; returns the window's change, if any.
    mutating func record(_ answer: Answer, at now: UInt64) -> (from: Int, to: Int, reason: Reason)? {
        obey(answer, at: now)
        let before = window
        let reason: Reason?
        switch answer.kind {
        case .ok:
            let latency = noteLatency(answer)
            reason = adaptive ? measured(answer, latency: latency, at: now) : nil
        case .refused: reason = adaptive ? refused(answer, at: now) : nil
        case .other: reason = nil
        }
        guard let reason, window != before else { return nil }
        return (before, window, reason)
    }

    private mutating func obey(_ answer: Answer, at now: UInt64) {
        let pauseLimit = UInt64(longestPauseMilliseconds) * 1_000_000
        if let milliseconds = answer.retryAfterMilliseconds {
            pausedUntil = max(pausedUntil, now + min(UInt64(max(0, milliseconds)) * 1_000_000, pauseLimit))
        }
        guard let limit = answer.rateLimit else { return }
        let name = limit.resource ?? ""
        limitOfRoute[answer.route] = name
        var quota = quotas[name] ?? Quota()
        defer { quotas[name] = quota }
        quota.lastLimit = limit
        quota.newestAnswered = max(quota.newestAnswered, answer.sentBefore)
        // Seconds from a server are bounded before they are multiplied.
        let reset = UInt64(min(limit.resetSeconds ?? 1, 1 << 32)) * 1_000_000_000
        // The count was made when this request reached the server: the ones sent after it may
        // have been counted since, or may be yet.
        let left = max(0, limit.remaining - max(0, sends - answer.sentBefore - 1))
        // The same window of the server's (its reset within a second of the last one said):
        // counts only go down in it. A later reset is a new window.
        if let allowance = quota.allowance, now < allowance.until, now + reset < allowance.until + 1_000_000_000 {
            quota.allowance = (min(allowance.remaining, left), now + reset)
            quota.fewestSaid = min(quota.fewestSaid ?? limit.remaining, limit.remaining)
        } else {
            quota.allowance = (left, now + reset)
            quota.fewestSaid = limit.remaining
        }
        // A spent limit holds every request until its reset (`take`): waited for within the
        // longest wait, else the request is not sent (`Permit.spent`).
    }

    /// Takes a good answer's latency into the best and the average (a fixed window keeps them
    /// too: an abandoned request's place waits the average out, see `OriginPace`).
    private mutating func noteLatency(_ answer: Answer) -> UInt64 {
        let latency = max(answer.latency, 1)
        best = min(best ?? latency, latency)
        // A window's worth of answers moves the average most of the way.
        average = average == 0 ? Double(latency) : average + (Double(latency) - average) * 2 / Double(window + 1)
        return latency
    }

    /// The least latency of the good answers of the last half round trip (at least a
    /// millisecond), this one included: what every request waits, however briefly the server
    /// was busy (Copa's standing latency). A queue the client builds slows them all; a moment's
    /// burst (the server's own work, a scheduling hiccup) slows only some.
    private mutating func standing(_ latency: UInt64, at now: UInt64) -> UInt64 {
        let span = max((best ?? latency) / 2, 1_000_000)
        recent.removeAll { now &- $0.at > span }
        recent.append((now, latency))
        return recent.lazy.map(\.latency).min() ?? latency
    }

    private mutating func measured(_ answer: Answer, latency: UInt64, at now: UInt64) -> Reason? {
        let best = self.best ?? latency
        let standing = standing(latency, at: now)
        // One slow answer ends the slow start (growth goes on by one a round trip): a queue
        // built fast shows first in single answers.
        if slowStart, Double(latency) > 1.5 * Double(best) + 1_000_000 { slowStart = false }
        // A millisecond added to both: at loopback latencies (well under one) the ratio would be
        // scheduling noise.
        let ratio = (Double(best) + 1e6) / (Double(standing) + 1e6)
        let queue = Double(window) * (1 - ratio)
        let tolerated = Double(max(2, window / 8))
        if queue > 2 * tolerated {
            slowStart = false
            // The server queues; how many it serves at once is the requests in flight with this
            // answer, times the best latency over the standing one (exact for a server that
            // queues in order or shares itself among them).
            let served = Int((Double(answer.inFlight) * (Double(best) + 1e6) / (Double(standing) + 1e6)).rounded())
            guard answer.sentAt >= lastCut, window > start, served < window else { return nil }
            regain = window
            growth = 0
            window = max(start, served)
            lastCut = now
            return .latencyRose
        }
        // An answer vouches for as many requests at once as were in flight with it, and the
        // window grows at most a slow start's step past that: a list that does not fill its
        // window (a serial walk, a list's last pages, page one and the page after it) does not
        // grow it on the strength of answers to fewer requests (TCP's window validation).
        let vouched = (Self.slowStartGain + 1) * max(1, answer.inFlight)
        guard queue <= tolerated, window < min(maximum, vouched) else { return nil }
        if let refusedAt, window + 1 >= refusedAt {
            // The step would reach what the server refused: taken only after enough good answers.
            sinceProbe += 1
            guard sinceProbe >= stepAfter else { return nil }
            sinceProbe = 0
            window += 1
            // The server took it: the next step waits half as long, and once that is less than a
            // window of answers the refused level is forgotten (growth goes on by one a round
            // trip). A refusal the server meant comes again at once; a stray one (a 503 from a
            // busy moment, not from capacity) would otherwise hold a client's window down for
            // as long as the client lives.
            stepAfter /= 2
            if stepAfter < window {
                self.refusedAt = nil
                probeAfter = 0
            } else {
                self.refusedAt = window + 1
            }
        } else if slowStart {
            window = min(maximum, vouched, window + Self.slowStartGain)
        } else {
            // A round trip's answers add half the way back to a cut's level, else one.
            let step = regain.map { max(1, ($0 - window + 1) / 2) } ?? 1
            growth += Double(step) / Double(window)
            guard growth >= 1 else { return nil }
            // Never past the level regrowth aims at, nor onto a refused one (stepped onto only
            // after its wait, above).
            window = min(maximum, regain ?? .max, (refusedAt ?? .max) - 1, window + Int(growth))
            growth -= growth.rounded(.down)
            if let regain, window >= regain { self.regain = nil }
        }
        return .latencyHolds
    }

    private mutating func refused(_ answer: Answer, at now: UInt64) -> Reason? {
        slowStart = false
        growth = 0
        regain = nil
        sinceProbe = 0
        // The 9th request of a burst of 32 refused by a server taking 8 says 9, not 32: the
        // requests sent after it are no part of what the server had when it refused it.
        let inFlight = min(answer.inFlight, answer.inFlightAtSend ?? .max)
        refusedAt = min(refusedAt ?? .max, max(1, inFlight))
        // A refusal to a request sent after the last cut is news: the next try past what the
        // server took waits twice as long. One sent before it only adds what its count says.
        if answer.sentAt >= lastCut {
            probeAfter = min(probeAfter == 0 ? 4 * window : 2 * probeAfter, Self.longestProbeWait)
            stepAfter = probeAfter
            lastCut = now
        }
        let taken = max(1, inFlight - 1)
        guard taken < window else { return nil }
        window = taken
        return .refused(inFlight: inFlight)
    }
}
