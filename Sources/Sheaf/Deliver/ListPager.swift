import Dispatch

/// A list loaded page by page as its caller asks ("load more", as an infinite-scroll view does).
///
/// Each `next` hands out one more page, fetched only then (or up to `lookAhead` pages ahead, held
/// back until asked for). A `next` while a page is on its way joins that page instead of asking
/// for another: any number of callers, on any threads, make one request per page. `reset` starts
/// over from the first page (a pull-to-refresh).
///
/// Underneath is one `ListRun` per start, made with a page gate that the pager raises by one page
/// per ask; the run delivers each page as a snapshot of its own, and the pager keeps the pages
/// nobody has taken yet. Everything a `ListDescription` says (paging, signals, budgets, a resume
/// token) applies as it does to a whole run.
public final class ListPager: Sendable {
    /// Where the pager stands, as a "load more" button shows it.
    public enum Status: Sendable, Equatable {
        /// Nothing asked for yet, or every page asked for has arrived: waiting for `next`.
        case idle
        /// A page asked for is on its way.
        case loading
        /// The list has ended and every page was handed out (`outcome` says how it ended).
        case ended
    }

    /// What `next` gives.
    public enum Next: Sendable {
        /// The next page, as a snapshot: its delta holds the page's items.
        case page(Snapshot)
        /// Not within the time allowed. The page stays asked for: a later `next` hands it out
        /// without a second request.
        case pending
        /// Nothing more: the list ended this way and every page was handed out.
        case end(ListOutcome)
    }

    /// One `next` waiting for a page: a blocked thread (waiting on the pager's state until it
    /// is answered), or a suspended task (resumed when it is).
    private final class Waiter: @unchecked Sendable {
        // Safe: `answer` and `resume` are read and written only under the pager's lock.
        var answer: Next?
        var resume: CheckedContinuation<Next, Never>?

        func give(_ next: Next) {
            guard answer == nil else { return }
            answer = next
            resume?.resume(returning: next)
        }
    }

    private struct State {
        var run: ListRun?
        /// Bumped by `reset`: what an older run still delivers is ignored.
        var generation = 0
        /// Pages asked for, and pages handed out (at most one fewer while a page is on its way).
        var asked = 0
        var handedOut = 0
        /// Pages the run delivered that nobody took yet, in order: pages fetched ahead, or a page
        /// whose callers stopped waiting.
        var ready: [Snapshot] = []
        var waiters: [Waiter] = []
        /// The last page handed out (its counts, and where the handed-out prefix ends).
        var last: Snapshot?
        /// The run has finished: every page it fetched is in `ready` or was handed out.
        var finished = false
        /// Set by `cancel` until a `reset`: a run started now is cancelled at once.
        var cancelled = false
        var closed = false

        /// The list has ended and every page was handed out.
        var ended: Bool { finished && ready.isEmpty }
    }

    private let client: SheafClient
    private let description: ListDescription
    private let keepsItems: Bool
    /// Pages fetched ahead of the ones asked for.
    public let lookAhead: Int
    private let state = Locked(State())

    /// - Throws: `.invalidArgument` for a negative look-ahead or a description that cannot run.
    init(client: SheafClient, description: ListDescription, keepsItems: Bool, lookAhead: Int) throws(SheafError) {
        guard lookAhead >= 0, lookAhead <= client.configuration.window else {
            throw SheafError(.invalidArgument, "the look-ahead must be 0 to the window (\(client.configuration.window)) pages")
        }
        try description.check()
        self.client = client
        self.description = description
        self.keepsItems = keepsItems
        self.lookAhead = lookAhead
    }

    /// Hands out the next page, asking for it unless it is already on its way or ahead; waits
    /// at most `timeoutMilliseconds` (nil: until it comes or the list ends; 0: not at all).
    /// - Throws: `.reentrant` when it would wait inside a Sheaf callback; the description's
    ///   errors at the first page (as `ListRun.init`).
    public func next(timeoutMilliseconds: Int? = nil) throws(SheafError) -> Next {
        if timeoutMilliseconds != 0, CallbackContext.isInsideCallback { throw SheafError.blockingCallInsideCallback }
        let waiter: Waiter
        switch try askAndMove() {
        case .now(let answer): return answer
        case .later(let asked): waiter = asked
        }
        return state.withLock(when: { _ in waiter.answer != nil }, timeoutMilliseconds: timeoutMilliseconds) { state, answered in
            if answered { return waiter.answer! }
            state.waiters.removeAll { $0 === waiter } // the page stays asked for
            return .pending
        }
    }

    /// Hands out the next page as `next` does, suspending (not blocking) until it comes or the
    /// list ends; never `.pending`.
    /// - Throws: `.cancelled` when the task is cancelled while it waits; the page stays asked
    ///   for, and the next call hands it out. Otherwise as `next`.
    public func more() async throws(SheafError) -> Next {
        let waiter: Waiter
        switch try askAndMove() {
        case .now(let answer): return answer
        case .later(let asked): waiter = asked
        }
        let answer = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Next, Never>) in
                let answer = state.withLock { _ -> Next? in
                    if waiter.answer == nil { waiter.resume = continuation }
                    return waiter.answer
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            if leave(waiter) {
                state.withLock { _ in waiter.give(.end(.failed(SheafError(.cancelled, "the task was cancelled")))) }
            }
        }
        if case .end(.failed(let error)) = answer, error.code == .cancelled, Task.isCancelled { throw error }
        return answer
    }

    /// What a `next` comes to once it has asked: an answer now, or a page to wait for.
    private enum Asked {
        case now(Next)
        case later(Waiter)
    }

    /// Asks (`ask`) and carries out what that takes: a run started or its gate raised.
    private func askAndMove() throws(SheafError) -> Asked {
        let (asked, moves) = try ask()
        if let moves { try carryOut(moves) }
        return asked
    }

    /// Takes `waiter` off the list of those waiting, unless it was answered; returns whether it was.
    private func leave(_ waiter: Waiter) -> Bool {
        state.withLock { state -> Bool in
            guard waiter.answer == nil else { return false }
            state.waiters.removeAll { $0 === waiter }
            return true
        }
    }

    /// Decides, under the lock, what a `next` does: answer at once, hand out a page that is in,
    /// or wait for the page asked for; and what the run must do for it.
    private func ask() throws(SheafError) -> (Asked, Moves?) {
        try state.withLock { (state) throws(SheafError) -> (Asked, Moves?) in
            guard !state.closed else { return (.now(.end(.failed(Self.closed))), nil) }
            let starts = state.run == nil
            if starts { state.run = try makeRun(generation: state.generation) }
            let run = state.run!
            var moves = Moves(run: run, startedGeneration: starts ? state.generation : nil)
            if state.handedOut == state.asked {
                if state.ended { return (.now(.end(run.outcome!)), nil) }
                state.asked += 1
                if !starts { moves.gate = state.asked + lookAhead } // a new run starts with its gate
            }
            if let page = take(&state) { return (.now(.page(page)), moves) } // a page fetched ahead
            if state.finished { return (.now(.end(run.outcome!)), nil) }
            let waiter = Waiter()
            state.waiters.append(waiter)
            return (.later(waiter), moves)
        }
    }

    /// What a run must do for a `next`: start (a new run, of that generation), or fetch up to a
    /// raised gate.
    private struct Moves {
        let run: ListRun
        var startedGeneration: Int?
        var gate: Int?
    }

    private func carryOut(_ moves: Moves) throws(SheafError) {
        let run = moves.run
        if let generation = moves.startedGeneration {
            try run.start()
            run.whenFinished { [weak self] in self?.runFinished(generation: generation) }
            // A reset between the decision and the start: the run started is nobody's; a cancel:
            // it must not go on.
            if state.withLock({ $0.generation != generation || $0.cancelled }) { run.cancel() }
        }
        if let gate = moves.gate { run.raisePageGate(to: gate) }
    }

    private func makeRun(generation: Int) throws(SheafError) -> ListRun {
        try ListRun(client: client, description: description, keepsItems: keepsItems, pageGate: 1 + lookAhead,
                    consumer: .callback { [weak self] snapshot in
                        self?.arrived(snapshot, generation: generation)
                        return true
                    })
    }

    deinit {
        // A run waiting at its gate holds nothing that would end it: it ends here.
        state.withLock { $0.run }?.cancel()
    }

    /// Starts over: what is in flight is cancelled, the pages handed out are forgotten, and the
    /// next `next` asks for the first page again. A `next` waiting now ends `.cancelled`.
    public func reset() {
        let old = state.withLock { state -> ListRun? in
            let old = state.run
            answer(&state, .end(.failed(SheafError(.cancelled, "the list was reset"))))
            state = State(generation: state.generation + 1, closed: state.closed)
            return old
        }
        state.changed()
        old?.close()
    }

    /// Ends the pager for good: as `reset`, and every later `next` ends `.cancelled`. Waits out a
    /// snapshot being handed over (unless called from one).
    public func close() {
        state.withLock { $0.closed = true }
        reset()
    }

    /// Ends the list now: what is in flight is abandoned and the outcome is `.cancelled`.
    /// Non-blocking; `reset` brings the pager back.
    public func cancel() {
        state.withLock { state in
            state.cancelled = true
            return state.run
        }?.cancel()
    }

    private static let closed = SheafError(.cancelled, "the list was closed")

    // MARK: What the pager knows

    public var status: Status {
        state.withLock { state in
            if state.ended { return .ended }
            return state.handedOut < state.asked && state.ready.isEmpty ? .loading : .idle
        }
    }

    /// The last page handed out (its delta, the counts of the prefix through it, the server's
    /// total); nil before the first.
    public var lastPage: Snapshot? { state.withLock { $0.last } }

    /// Pages in, and not yet handed out.
    public var pagesReady: Int { state.withLock { $0.ready.count } }

    /// How the list ended, once the pager has `.ended`; nil before.
    public var outcome: ListOutcome? {
        state.withLock { state in state.ended ? state.run?.outcome : nil }
    }

    /// The current run (for its request counts and description); nil before the first `next`.
    package var run: ListRun? { state.withLock { $0.run } }

    /// The pages handed out so far, as one JSON array.
    public func prefixJSON() -> [UInt8] {
        let (run, last) = state.withLock { ($0.run, $0.last) }
        guard let run, let last else { return Array("[]".utf8) }
        return run.prefixJSON(through: last)
    }

    /// The token that goes on after the pages handed out so far (nil when nothing is left).
    public func resumeToken() -> ResumeToken? {
        let (run, last) = state.withLock { ($0.run, $0.last) }
        guard let run else { return description.resume }
        return run.resumeToken(through: last)
    }

    // MARK: Events of the run

    private func arrived(_ snapshot: Snapshot, generation: Int) {
        state.withLock { state in
            guard state.generation == generation else { return }
            state.ready.append(snapshot)
            if !state.waiters.isEmpty, let page = take(&state) { answer(&state, .page(page)) }
        }
        state.changed()
    }

    private func runFinished(generation: Int) {
        state.withLock { state in
            guard state.generation == generation, let outcome = state.run?.outcome else { return }
            state.finished = true
            // A waiter is only ever waiting while nothing is ready: nothing more will come.
            answer(&state, .end(outcome))
        }
        state.changed()
    }

    /// The next page asked for, if it is in: handed out.
    private func take(_ state: inout State) -> Snapshot? {
        guard state.handedOut < state.asked, !state.ready.isEmpty else { return nil }
        let page = state.ready.removeFirst()
        state.handedOut += 1
        state.last = page
        return page
    }

    /// Answers every waiting `next` alike: they all asked for the same page. A thread blocked in
    /// `next` sees its answer once the caller, out of the lock, says the state `changed()`.
    private func answer(_ state: inout State, _ answer: Next) {
        for waiter in state.waiters { waiter.give(answer) }
        state.waiters.removeAll()
    }
}
