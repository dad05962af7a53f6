import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The window of one origin on one client (`SheafClient.pace(for:)`): every attempt of every list,
/// request and download the client runs there is admitted through it, so that lists started
/// together share what the server takes rather than each bringing a window of its own, and a list started later begins
/// with what the earlier ones learnt (the window, the best latency, a refused level, a rate
/// limit). Logs each change of the window.
///
/// Admission: an attempt that finds no room waits in one of two lines, and a request that leaves
/// the transport hands its place straight to the first of the first line, else of the second
/// (counted in flight for it), so no turn is lost between a check and a send. The first line is
/// for attempts that lead their list, the one page it can ask for next (its page one, the next
/// page of a list walked by next links or cursors), for a fan-out parent's pages (they make the
/// other lists' work) and for single requests; the second for the
/// pages a list knows of or guesses beyond that, which it asks for many at once. A list read one
/// page after another never waits behind the pages other lists could have asked for at any time,
/// so many lists end when the longest walk does. One handed a turn after its fetch is over hands
/// it on.
final class OriginPace: Sendable {
    typealias Turn = @Sendable () -> Bool

    /// Attempts waiting for room, oldest first from `head` (compacted as it is read: a long line
    /// is not shifted on every turn).
    private struct Line {
        var turns: [Turn] = []
        var head = 0
        var isEmpty: Bool { head == turns.count }

        mutating func append(_ turn: @escaping Turn) { turns.append(turn) }

        mutating func next() -> Turn? {
            guard head < turns.count else { return nil }
            let turn = turns[head]
            head += 1
            if head == turns.count {
                turns.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64, head * 2 >= turns.count {
                turns.removeFirst(head)
                head = 0
            }
            return turn
        }
    }

    private struct State {
        var limiter: WindowLimiter
        /// Attempts admitted and not yet answered (or abandoned): at the transport, or about to be.
        var inFlight = 0
        /// Attempts that lead their list (or are requests of their own), and the other pages.
        var leading = Line()
        var others = Line()
        /// Whether the origin has answered a list's page one with success (see
        /// `SheafClient.asksAhead(of:)`).
        var answeredPageOne = false

        mutating func nextInLine(at now: UInt64) -> Turn? {
            guard !(leading.isEmpty && others.isEmpty), limiter.hasRoom(at: now, inFlight: inFlight),
                  let turn = leading.next() ?? others.next() else { return nil }
            inFlight += 1
            return turn
        }
    }

    private let state: Locked<State>
    private let hooks: Hooks?

    init(_ configuration: ClientConfiguration, hooks: Hooks?) {
        state = Locked(State(limiter: WindowLimiter(adaptive: configuration.adaptsWindow, start: configuration.window,
                                                    maximum: configuration.maxWindow,
                                                    longestPauseMilliseconds: configuration.retry.maxDelayMilliseconds,
                                                    longestQuotaWaitMilliseconds: configuration.maxWaitMilliseconds)))
        self.hooks = hooks
    }

    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// "0.4 ms", "51.0 ms".
    private static func milliseconds(_ nanoseconds: UInt64) -> String {
        let tenths = nanoseconds / 100_000
        return "\(tenths / 10).\(tenths % 10) ms"
    }

    /// The requests the origin may have in flight now.
    var window: Int { state.withLock { $0.limiter.current(at: Self.now, inFlight: $0.inFlight) } }

    /// Attempts admitted and not yet answered.
    var inFlight: Int { state.withLock { $0.inFlight } }

    var hasAnsweredPageOne: Bool { state.withLock { $0.answeredPageOne } }

    func noteAnsweredPageOne() { state.withLock { $0.answeredPageOne = true } }

    /// Takes a place in flight for an attempt (true), or puts `turn` in line (false; the first
    /// line when it `leads` its list): it runs once there is room, on a global queue, with the
    /// place already taken for it, and says whether it used it (false: its fetch is over; the
    /// place goes to the next in line). The place is given back with `release`.
    func admit(leading leads: Bool, otherwise turn: @escaping Turn) -> Bool {
        state.withLock { state in
            // Nobody waits ahead of it: nothing leading, and for another page nothing at all.
            if state.leading.isEmpty, leads || state.others.isEmpty,
               state.limiter.hasRoom(at: Self.now, inFlight: state.inFlight) {
                state.inFlight += 1
                return true
            }
            if leads { state.leading.append(turn) } else { state.others.append(turn) }
            return false
        }
    }

    /// An admitted attempt is over (answered, abandoned, or never sent): its place goes to the
    /// first in line when the window has room.
    func release() {
        let turns = state.withLock { state in
            state.inFlight = max(0, state.inFlight - 1)
            return Self.turns(&state)
        }
        hand(turns)
    }

    /// An attempt abandoned at the transport (sent at `sentAt`) is over for the client, not for
    /// the server, which answers it anyway (a page speculated past a list's end, a page of a list
    /// cancelled): its place is given back when the server has likely done with it, the usual
    /// latency after it was sent (at once when none is known yet; a second at most).
    func releaseAbandoned(sentAt: UInt64) {
        let latency = state.withLock { UInt64(max(0, $0.limiter.average)) }
        let now = Self.now
        let done = sentAt &+ min(latency, 1_000_000_000)
        guard latency > 0, done > now else { return release() }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(done - now))) { [self] in
            release()
        }
    }

    /// Every waiting attempt the window has room for, each counted in flight.
    private static func turns(_ state: inout State) -> [Turn] {
        var turns: [Turn] = []
        let now = Self.now
        while let next = state.nextInLine(at: now) { turns.append(next) }
        return turns
    }

    private func hand(_ turns: [Turn]) {
        for turn in turns {
            DispatchQueue.global().async { [self] in
                if !turn() { release() }
            }
        }
    }

    /// Whether a request goes to the transport now (counted as sent), waits first, or finds
    /// the server's rate limit spent past the client's longest wait (`WindowLimiter.take`).
    /// `route`: the request's (`WindowLimiter.route(of:)`), whose rate limit it counts against.
    func take(route: String = "") -> WindowLimiter.Permit {
        state.withLock { $0.limiter.take(at: Self.now, othersInFlight: max(0, $0.inFlight - 1), route: route) } // itself among them
    }

    /// What the rate limit of `route` (nil: the one with the fewest left) has left and the
    /// milliseconds until it resets, as last heard (see `WindowLimiter.quota`).
    func quota(route: String? = nil) -> (remaining: Int, resetsInMilliseconds: Int)? {
        state.withLock { $0.limiter.quota(at: Self.now, route: route) }.map { ($0.remaining, Int(($0.resetsIn + 999_999) / 1_000_000)) }
    }

    /// Milliseconds a request about to be sent waits first (0: none).
    var pause: Int { state.withLock { $0.limiter.pause(at: Self.now) } }

    /// Takes in the answer to an attempt sent at `sentAt` with `inFlight` requests to the origin
    /// in flight (itself included). Only when `sizesWindow` (a list's page) do its latency and a
    /// refusal size the window; a Retry-After and rate-limit headers are obeyed whoever got them.
    /// A window that grew lets in whoever waits.
    func record(_ result: Result<HTTPResponse, TransportError>, sentAt: UInt64, sentBefore: Int, inFlight: Int,
                inFlightAtSend: Int? = nil, sizesWindow: Bool = true, route: String = "") {
        let now = Self.now
        var answer = WindowLimiter.Answer(kind: .other, sentAt: sentAt, latency: now &- sentAt, inFlight: inFlight,
                                          inFlightAtSend: inFlightAtSend, sentBefore: sentBefore, route: route)
        switch result {
        case .success(let response):
            answer.rateLimit = RateLimitHeaders.parse(response.headers)
            switch response.status {
            case 200...299:
                answer.kind = .ok
            case 403, 429, 503, 504:
                // Every request of the origin waits a Retry-After out (a 403 with one is GitHub's
                // secondary limit); a 403, or a 429 of a spent quota, says nothing of how many
                // the server takes at once.
                let quota = response.status == 403 || (response.status == 429 && answer.rateLimit?.remaining == 0)
                answer.kind = quota ? .other : .refused
                answer.retryAfterMilliseconds = response.headers.first(named: "Retry-After")
                    .flatMap { RetryPolicy.parseRetryAfter($0, now: Date()) }.map { $0 * 1000 }
            default:
                break
            }
        case .failure(let error):
            if error.kind == .timeout { answer.kind = .refused }
        }
        if !sizesWindow { answer.kind = .other }
        let (change, turns) = state.withLock { state in
            let change = state.limiter.record(answer, at: now)
            return (change, change.map { $0.to > $0.from } == true ? Self.turns(&state) : [])
        }
        hand(turns)
        guard let change, let hooks else { return }
        let level: LogRecord.Level = if case .refused = change.reason { .info } else { .debug }
        hooks.log(level) {
            let why = switch change.reason {
            case .latencyHolds: "answers come as fast as the best (\(Self.milliseconds(answer.latency)))"
            case .latencyRose: "answers slowed to \(Self.milliseconds(answer.latency)): the server queues them"
            case .refused(let inFlight): "the server refused a request with \(inFlight) in flight"
            }
            return LogRecord(level: level, kind: .window, message: "window \(change.from) → \(change.to): \(why)")
        }
    }
}
