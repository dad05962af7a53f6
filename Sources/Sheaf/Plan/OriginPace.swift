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
/// Admission: an attempt that finds no room waits in its owner's line (an owner is a list or a
/// request: its attempts go in the order they came), and a request that leaves the transport
/// hands its place straight to the next turn (counted in flight for it), so no turn is lost
/// between a check and a send. The next turn is the first waiting owner's that holds no place,
/// else the first waiting owner's, which then goes to the back of the owners waiting: a list
/// walked one page after another (a next link, a cursor) and a list's page one never wait
/// behind the pages of lists that have some in flight already, and lists with pages to spare
/// take turns. One handed a turn after its fetch is over hands it on.
final class OriginPace: Sendable {
    typealias Turn = @Sendable () -> Bool

    /// The attempts of one owner waiting for room, oldest first from `head`, and the places it
    /// holds.
    private struct Line {
        var turns: [Turn] = []
        var head = 0
        var held = 0
        var isWaiting: Bool { head < turns.count }
    }

    private struct State {
        var limiter: WindowLimiter
        /// Attempts admitted and not yet answered (or abandoned): at the transport, or about to be.
        var inFlight = 0
        /// The owners with attempts waiting or places held.
        var lines: [ObjectIdentifier: Line] = [:]
        /// The owners with attempts waiting, each once, in the order they take turns from `head`
        /// (compacted as it is read: a long line is not shifted on every turn).
        var waiting: [ObjectIdentifier] = []
        var head = 0
        /// Whether the origin has answered a list's page one with success (see
        /// `SheafClient.asksAhead(of:)`).
        var answeredPageOne = false

        var isWaiting: Bool { head < waiting.count }

        mutating func take(for owner: ObjectIdentifier) {
            inFlight += 1
            lines[owner, default: Line()].held += 1
        }

        mutating func give(for owner: ObjectIdentifier) {
            inFlight = max(0, inFlight - 1)
            guard var line = lines[owner] else { return }
            line.held = max(0, line.held - 1)
            lines[owner] = line.held == 0 && !line.isWaiting ? nil : line
        }

        mutating func wait(_ turn: @escaping Turn, for owner: ObjectIdentifier) {
            var line = lines[owner] ?? Line()
            if !line.isWaiting { waiting.append(owner) }
            line.turns.append(turn)
            lines[owner] = line
        }

        mutating func nextInLine(at now: UInt64) -> (owner: ObjectIdentifier, turn: Turn)? {
            guard isWaiting, limiter.hasRoom(at: now, inFlight: inFlight) else { return nil }
            // The first owner holding no place; only owners holding places can be passed over,
            // and they hold at most what is in flight: the search is as short as the window.
            var chosen = head
            while chosen < waiting.count, lines[waiting[chosen]]?.held ?? 0 > 0 { chosen += 1 }
            if chosen == waiting.count { chosen = head }
            let owner = waiting[chosen]
            // Taken out of the order; the ones passed over keep theirs.
            var place = chosen
            while place > head {
                waiting[place] = waiting[place - 1]
                place -= 1
            }
            head += 1
            var line = lines[owner] ?? Line()
            let turn = line.turns[line.head]
            line.head += 1
            if line.isWaiting {
                waiting.append(owner)
                if line.head >= 64, line.head * 2 >= line.turns.count {
                    line.turns.removeFirst(line.head)
                    line.head = 0
                }
            } else {
                line.turns.removeAll()
                line.head = 0
            }
            line.held += 1
            lines[owner] = line
            inFlight += 1
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64, head * 2 >= waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            return (owner, turn)
        }
    }

    private let state: Locked<State>
    private let hooks: Hooks?

    init(_ configuration: ClientConfiguration, hooks: Hooks?) {
        state = Locked(State(limiter: WindowLimiter(adaptive: configuration.adaptsWindow, start: configuration.window,
                                                    maximum: configuration.maxWindow,
                                                    longestPauseMilliseconds: configuration.retry.maxDelayMilliseconds)))
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

    /// Takes a place in flight for an attempt of `owner` (true), or puts `turn` in the owner's
    /// line (false): it runs once its turn comes and there is room, on a global queue, with the
    /// place already taken for it, and says whether it used it (false: its fetch is over; the
    /// place goes to the next turn). The place is given back with `release`.
    func admit(for owner: RequestCounters, otherwise turn: @escaping Turn) -> Bool {
        let owner = ObjectIdentifier(owner)
        return state.withLock { state in
            if !state.isWaiting, state.limiter.hasRoom(at: Self.now, inFlight: state.inFlight) {
                state.take(for: owner)
                return true
            }
            state.wait(turn, for: owner)
            return false
        }
    }

    /// An admitted attempt of `owner` is over (answered, abandoned, or never sent): its place
    /// goes to the next turn when the window has room.
    func release(for owner: RequestCounters) {
        giveBack(for: ObjectIdentifier(owner))
    }

    /// An attempt of `owner` abandoned at the transport (sent at `sentAt`) is over for the
    /// client, not for the server, which answers it anyway (a page speculated past a list's end,
    /// a page of a list cancelled): its place is given back when the server has likely done with
    /// it, the usual latency after it was sent (at once when none is known yet; a second at most).
    func releaseAbandoned(for owner: RequestCounters, sentAt: UInt64) {
        let latency = state.withLock { UInt64(max(0, $0.limiter.average)) }
        let now = Self.now
        let done = sentAt &+ min(latency, 1_000_000_000)
        guard latency > 0, done > now else { return release(for: owner) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(done - now))) { [self] in
            release(for: owner)
        }
    }

    /// Every waiting attempt the window has room for, each counted in flight for its owner.
    private static func turns(_ state: inout State) -> [(owner: ObjectIdentifier, turn: Turn)] {
        var turns: [(owner: ObjectIdentifier, turn: Turn)] = []
        let now = Self.now
        while let next = state.nextInLine(at: now) { turns.append(next) }
        return turns
    }

    private func hand(_ turns: [(owner: ObjectIdentifier, turn: Turn)]) {
        for (owner, turn) in turns {
            DispatchQueue.global().async { [self] in
                if !turn() { giveBack(for: owner) }
            }
        }
    }

    private func giveBack(for owner: ObjectIdentifier) {
        let turns = state.withLock { state in
            state.give(for: owner)
            return Self.turns(&state)
        }
        hand(turns)
    }

    /// A request to the origin goes to the transport; returns the requests sent before it.
    func sent() -> Int {
        state.withLock { $0.limiter.sent(at: Self.now) }
    }

    /// Milliseconds a request about to be sent waits first (0: none).
    var pause: Int { state.withLock { $0.limiter.pause(at: Self.now) } }

    /// Takes in the answer to an attempt sent at `sentAt` with `inFlight` requests to the origin
    /// in flight (itself included). Only when `sizesWindow` (a list's page) do its latency and a
    /// refusal size the window; a Retry-After and rate-limit headers are obeyed whoever got them.
    /// A window that grew lets in whoever waits.
    func record(_ result: Result<HTTPResponse, TransportError>, sentAt: UInt64, sentBefore: Int, inFlight: Int,
                inFlightAtSend: Int? = nil, sizesWindow: Bool = true) {
        let now = Self.now
        var answer = WindowLimiter.Answer(kind: .other, sentAt: sentAt, latency: now &- sentAt, inFlight: inFlight,
                                          inFlightAtSend: inFlightAtSend, sentBefore: sentBefore)
        switch result {
        case .success(let response):
            answer.rateLimit = RateLimitHeaders.parse(response.headers)
            switch response.status {
            case 200...299:
                answer.kind = .ok
            case 429, 503, 504:
                answer.kind = .refused
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
