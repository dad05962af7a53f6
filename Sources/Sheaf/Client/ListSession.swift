/// A snapshot as a pulling caller holds it once taken (an embedding layer's copy of it).
package protocol TakenSnapshot: Sendable {
    /// The snapshot without its delta's items: the counts, and where the prefix ends.
    var snapshot: Snapshot { get }
}

/// A list as an embedding layer holds it (the C API's `sheaf_list`): a description built call
/// by call, then run once in one of its modes (with a callback, pulled, load-more, in a group),
/// and what its caller has seen of it: the prefix, counts, resume token and sync state a caller
/// is told end at the last snapshot it has seen. The rules of those modes are here; the layer
/// converts values and errors and owns the memory it hands out. `Taken` is that layer's copy of
/// a pulled snapshot; `Settings`, what the layer sets on a list besides its description (a
/// transport of its own, headers, a notify fd), refused once it has started as the description is.
package final class ListSession<Taken: TakenSnapshot, Settings: Sendable>: Sendable {
    /// Makes the client a list runs with, from its settings.
    package typealias ClientMaker = (Settings) throws(SheafError) -> SheafClient

    private struct State {
        var started: Bool { run != nil || pager != nil }
        var description: ListDescription
        var settings: Settings
        var keepsItems = true
        var run: ListRun?
        /// Set when the list was started in load-more mode.
        var pager: ListPager?
        /// Set when the list was started for pulling.
        var pull: SnapshotChannel<Taken>?
        /// The last snapshot taken from `pull`: the prefix a puller saw ends there.
        var lastTaken: Taken?
        /// Whether a group runs the list: nobody waits on it, so its outcome's error is read
        /// from the run.
        var inGroup = false

        /// The run: the list's one run, or a load-more list's current one.
        var current: ListRun? { pager?.run ?? run }

        /// The last snapshot the caller has seen: handed out by the pager, taken from the pull,
        /// or delivered to the callback.
        var seen: Snapshot? {
            if let pager { return pager.lastPage }
            return pull != nil ? lastTaken?.snapshot : run?.lastDelivered
        }
    }

    /// Where the list stands (`sheaf_list_get_status`).
    package struct Status: Sendable {
        package enum Stage: Sendable { case new, idle, loading, ended }
        package var stage: Stage
        /// Pages ready to hand out, for a load-more list.
        package var pagesReady = 0
        /// What the caller has seen: items and pages, and the totals expected (when known).
        package var items = 0, pages = 0
        package var expectedItems: Int?, expectedPages: Int?
        package var requestsMade = 0, requestsInFlight = 0, window = 0, requestsRevalidated = 0
        /// The origin's rate limit as last heard (`ListRun.quota`).
        package var quota: (remaining: Int, resetsInMilliseconds: Int)?
        /// How the list ended, once it has; `reachedBound`: at its bound (`ListRun.reachedBound`).
        package var outcome: ListOutcome?
        package var reachedBound = false
        /// It ended complete after one full page nothing confirmed was its last (`ListRun.endUnconfirmed`).
        package var endUnconfirmed = false
    }

    private let state: Locked<State>

    package init(path: String, settings: Settings) {
        state = Locked(State(description: ListDescription(path: path), settings: settings))
    }

    /// A list of a group that the group made (a fan-out's child), reading `run` as its own.
    package init(adopting run: ListRun, description: ListDescription, keepsItems: Bool, settings: Settings) {
        var state = State(description: description, settings: settings)
        state.keepsItems = keepsItems
        state.run = run
        state.inGroup = true
        self.state = Locked(state)
    }

    // MARK: Before the run

    /// Changes the description the list will run with; refused once it has started.
    package func describe(_ change: (inout ListDescription) throws(SheafError) -> Void) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            try Self.refuseStarted(state)
            try change(&state.description)
        }
    }

    package func setKeepsItems(_ keeps: Bool) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            try Self.refuseStarted(state)
            state.keepsItems = keeps
        }
    }

    /// Changes the layer's settings; refused once the list has started.
    package func configure(_ change: (inout Settings) throws(SheafError) -> Void) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            try Self.refuseStarted(state)
            try change(&state.settings)
        }
    }

    /// Sets the list to run exactly `partition`: its paging, signals and preset are the plan's.
    package func setPartition(_ partition: Partition) throws(SheafError) {
        try describe { description in
            description.partition = partition
            let read = partition.description(path: description.path)
            description.paging = read.paging
            description.signals = read.signals
            description.preset = read.preset
        }
    }

    /// Splits the list into up to `count` partitions from its page one, on `client` (the one it
    /// would run with); the list itself stays unstarted.
    package func partitions(count: Int, atOnce: Int, client: ClientMaker) throws(SheafError) -> [Partition] {
        let (client, description) = try state.withLock { (state) throws(SheafError) -> (SheafClient, ListDescription) in
            try Self.refuseRun(state)
            return (try client(state.settings), state.description)
        }
        return try client.partitions(of: description, count: count, atOnce: atOnce)
    }

    /// The description, client and keeping of a list that never runs itself (a fan-out's child
    /// prototype).
    package func prototype(client: ClientMaker) throws(SheafError) -> (client: SheafClient, description: ListDescription, keepsItems: Bool) {
        try state.withLock { (state) throws(SheafError) in
            try Self.refuseRun(state)
            return (try client(state.settings), state.description, state.keepsItems)
        }
    }

    // MARK: Running

    /// How a list is started: each is a composition of the pulled run or of a run with a callback.
    package enum Mode {
        /// A callback per snapshot (nil: none); `wake` after each one and at the end.
        case callback((@Sendable (Snapshot) -> Bool)?, wake: (@Sendable () -> Void)?)
        /// Snapshots queued for the caller to take (`next`), `taken` copying each one on the run's
        /// delivery thread; `wake` when one is ready or the end is.
        case pull(taken: @Sendable (Snapshot) -> Taken, wake: (@Sendable () -> Void)?)
    }

    /// Starts the run, once, on the client its settings make, in the mode they make.
    /// - Parameters:
    ///   - keepingItems: in place of `setKeepsItems` (fetch-all keeps them, an output does not).
    ///   - finishing: see `ListRun.finishing`.
    @discardableResult
    package func start(_ mode: (Settings) -> Mode, keepingItems: Bool? = nil, client: ClientMaker,
                       finishing: (@Sendable (ListOutcome) -> ListOutcome)? = nil) throws(SheafError) -> ListRun {
        let run = try state.withLock { (state) throws(SheafError) -> ListRun in
            try Self.refuseRun(state)
            let client = try client(state.settings)
            if let keepingItems { state.keepsItems = keepingItems }
            let run: ListRun
            switch mode(state.settings) {
            case .pull(let taken, let wake):
                let pull = SnapshotChannel<Taken>()
                if let wake { pull.whenReady(wake) }
                run = try client.makeList(state.description, keepsItems: state.keepsItems, into: pull) { (taken($0), true) }
                state.pull = pull
            case .callback(let onSnapshot, let wake?):
                // A waiter (an event loop, Python's fetch_to) wakes after each snapshot delivered
                // and at the end, instead of polling the status.
                run = try client.makeList(state.description, keepsItems: state.keepsItems) { snapshot in
                    defer { wake() }
                    return onSnapshot?(snapshot) ?? true
                }
                run.whenFinished(wake)
            case .callback(let onSnapshot, nil):
                run = try client.makeList(state.description, keepsItems: state.keepsItems, onSnapshot: onSnapshot)
            }
            state.run = run
            return run
        }
        if let finishing { run.finishing(finishing) }
        try run.start()
        return run
    }

    /// Fetches every item: a run with no callback, waited for; the items it kept, with the
    /// outcome (items that arrived before a failure are kept too). `ListRun.wait` refuses a
    /// call from inside a callback.
    package func fetchAll(_ mode: (Settings) -> Mode, client: ClientMaker) throws(SheafError) -> (ListOutcome, [ArraySlice<UInt8>]) {
        let run = try start(mode, keepingItems: true, client: client)
        let outcome = try run.wait()
        return (outcome, run.prefixPieces(through: nil))
    }

    /// Starts the list in load-more mode: nothing is fetched until the pager is asked.
    package func startLoadMore(lookAhead: Int, client: ClientMaker) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            try Self.refuseRun(state)
            state.pager = try client(state.settings).makePager(state.description, keepsItems: state.keepsItems, lookAhead: lookAhead)
        }
    }

    /// Joins a group: `join` makes the list's run in the group from its client, description and
    /// keeping; the list then reads that run as its own, and cannot be started itself.
    package func joinGroup(client: ClientMaker,
                           _ join: (SheafClient, ListDescription, Bool) throws(SheafError) -> ListRun) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            try Self.refuseRun(state)
            state.run = try join(try client(state.settings), state.description, state.keepsItems)
            state.inGroup = true
        }
    }

    /// The next snapshot of a pulled list, waiting up to `timeoutMilliseconds` (nil: for ever).
    package func next(timeoutMilliseconds: Int?) throws(SheafError) -> SnapshotChannel<Taken>.Next {
        guard let pull = state.withLock({ $0.pull }) else {
            throw SheafError(.state, "the list was not started with sheaf_list_start_pull")
        }
        if timeoutMilliseconds != 0, CallbackContext.isInsideCallback { throw SheafError.blockingCallInsideCallback }
        let next = pull.next(timeoutMilliseconds: timeoutMilliseconds)
        if case .snapshot(let taken) = next { state.withLock { $0.lastTaken = taken } }
        return next
    }

    /// Waits for the end: a load-more list's outcome once it has one (it goes on only as asked),
    /// or the run's; a pulled list's remaining snapshots are dropped (nobody takes them any more).
    package func wait() throws(SheafError) -> ListOutcome {
        let (pager, run, pull) = state.withLock { ($0.pager, $0.current, $0.pull) }
        if let pager {
            guard let outcome = pager.outcome else {
                throw SheafError(.state, "a load-more list goes on only as sheaf_list_more asks: it has not ended")
            }
            return outcome
        }
        guard let run else { throw SheafError(.state, "the list has not been started") }
        if !CallbackContext.isInsideCallback { pull?.close() }
        return try run.wait()
    }

    /// Lets go of the list (its handle is freed): a pulled list first lets go of its snapshots,
    /// so a delivery waiting for room returns; `release` runs then; the run is closed last
    /// (cancelled, a running callback waited out; from inside the list's own callback only
    /// cancelled, and the run's hold on the handle ends after that callback returns).
    package func close(releasing release: () -> Void) {
        let (pull, pager, run) = state.withLock { ($0.pull, $0.pager, $0.current) }
        pull?.close()
        pager?.close()
        release()
        run?.close()
    }

    package func cancel() {
        let (pager, run) = state.withLock { ($0.pager, $0.current) }
        if let pager { pager.cancel() } else { run?.cancel() }
    }

    /// The load-more pager; refused for a list started otherwise.
    package func loadMorePager() throws(SheafError) -> ListPager {
        guard let pager = state.withLock({ $0.pager }) else {
            throw SheafError(.state, "the list was not started with sheaf_list_start_load_more")
        }
        return pager
    }

    // MARK: What the caller has seen

    /// The run: the list's one run, or a load-more list's current one.
    package var run: ListRun? { state.withLock { $0.current } }
    package var keepsItems: Bool { state.withLock { $0.keepsItems } }
    package var inGroup: Bool { state.withLock { $0.inGroup } }
    /// The snapshot taken last from a pulled list.
    package var lastTaken: Taken? { state.withLock { $0.lastTaken } }

    /// The description as pinned (before a run) or as the run uses it; for a list that syncs,
    /// the state through the snapshots the caller has seen (before the run, the one it starts
    /// from), with the list it is of (`listURL`, from the client the list would run with).
    package func descriptionJSON(listURL: (ListDescription) -> String?) -> [UInt8] {
        let (run, seen, description) = state.withLock { ($0.current, $0.seen, $0.description) }
        if let run { return run.descriptionJSON(syncThrough: seen) }
        let sync = description.syncState(greatest: nil).map { state in (list: listURL(description), state: state) }
        return description.json(resolution: nil, plan: nil, sync: sync)
    }

    /// The URL of the list's first page, redacted (`ListRun.url`); before the run, the one it
    /// would start from.
    package func url(client: () throws(SheafError) -> SheafClient) throws(SheafError) -> String {
        let (run, description) = state.withLock { ($0.current, $0.description) }
        if let run { return run.url }
        return try client().listURL(of: description)
    }

    /// The prefix the caller has seen, as `ListRun.prefixPieces` gives it; refused for a list
    /// that does not keep its items.
    package func prefixPieces() throws(SheafError) -> [ArraySlice<UInt8>] {
        let (run, seen, keeps) = state.withLock { ($0.current, $0.seen, $0.keepsItems) }
        guard keeps else { throw SheafError(.state, "the list does not keep its items (sheaf_list_set_keep_items)") }
        guard let run, let seen else { return [] }
        return run.prefixPieces(through: seen)
    }

    /// The token that resumes after the prefix the caller has seen; before the run, the one it
    /// would resume from.
    package func resumeToken() -> ResumeToken? {
        let (run, seen, description) = state.withLock { ($0.current, $0.seen, $0.description) }
        guard let run else { return description.resume }
        return run.resumeToken(through: seen)
    }

    package var status: Status {
        let (run, seen, pager) = state.withLock { ($0.current, $0.seen, $0.pager) }
        var status = Status(stage: .new)
        if let pager {
            status.pagesReady = pager.pagesReady
            switch pager.status {
            case .idle: status.stage = .idle
            case .loading: status.stage = .loading
            case .ended: status.stage = .ended
            }
        } else {
            status.stage = run == nil ? .new : run?.outcome == nil ? .loading : .ended
        }
        status.items = seen?.delta.totalItems ?? 0
        status.pages = seen?.delta.pages ?? 0
        status.expectedItems = seen?.expectedItems
        status.expectedPages = seen?.expectedPages
        status.requestsMade = run?.requestsMade ?? 0
        status.requestsInFlight = run?.requestsInFlight ?? 0
        status.requestsRevalidated = run?.requestsRevalidated ?? 0
        status.quota = run?.quota
        status.window = run?.window ?? 0
        if status.stage == .ended {
            status.outcome = pager?.outcome ?? run?.outcome
            status.reachedBound = run?.reachedBound == true
            status.endUnconfirmed = run?.endUnconfirmed == true
        }
        return status
    }

    private static func refuseStarted(_ state: State) throws(SheafError) {
        guard !state.started else { throw SheafError(.state, "the list has already been started") }
    }

    private static func refuseRun(_ state: State) throws(SheafError) {
        guard !state.started else { throw SheafError(.state, "a list runs once; create a new list to run it again") }
    }
}
