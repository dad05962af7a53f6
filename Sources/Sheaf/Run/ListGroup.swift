import Dispatch

/// One delta of a group (`ListGroup`): what one of its lists added, or how it ended.
public struct GroupDelta: Sendable {
    /// The list's place in the group: 0, 1, ... in the order the lists joined it (a fan-out's
    /// parent first, then its children as the parent's items name them).
    public var list: Int
    /// The list's tag: the one it was added with; for a child, the value its parent's item filled
    /// the template with (its URL when the template takes several).
    public var tag: String
    /// What the list's prefix gained; nil on the list's last delta.
    public var snapshot: Snapshot?
    /// How the list ended, on its last delta (which adds no items); nil before.
    public var outcome: ListOutcome?
    /// For a fan-out's parent (the list added with `addEach`, or a list of a middle level of a
    /// fan-out of several), the templates its items fill, in order; nil for a list of items.
    /// Only a parent's last delta comes: its items name children and are not delivered.
    public var templates: [String]? = nil
}

/// Many lists run as one job on one client (`SheafClient.makeGroup`): one stream of deltas, each
/// saying which list it belongs to, and one outcome.
///
/// - **One budget.** Every list of the group sends through the client's window for its origin
///   (`OriginPace`), so 300 lists started together send what one list would, and a rate limit one
///   of them meets slows all of them.
/// - **Fan-out.** A parent list's items name child lists through templates (`ChildTemplate`):
///   each item's child joins the group as the parent's page brings it, once per URL and level (a
///   parent item that repeats is fetched once; a URL that is a parent at one level and a leaf at
///   another is both); a template of more levels makes each child a parent in turn. A parent's items are not delivered, only its end.
/// - **Order.** Each list's deltas come in its order. Across lists, as they arrive; or, `ordered`,
///   list after list in the order they joined (a list waiting its turn stops asking once a
///   window of its pages waits, its snapshots counting as not taken; with the pages kept ahead of
///   a slow one, it holds three windows at most).
/// - **Failure.** A list that fails does not stop the others unless `failFast` (then the rest are
///   cancelled); each list's last delta carries its outcome, and the group's outcome is
///   `.partial` naming how many failed and the first failure. A parent item whose value the template
///   cannot use is skipped with a warning, or (`missingValueFails`) fails its parent.
///
/// Deltas reach a callback one at a time (never two at once), or a channel the caller takes from
/// (`next(timeoutMilliseconds:)`); a list's snapshot counts against its window until delivered.
public final class ListGroup: Sendable {
    public struct Options: Sendable, Equatable {
        /// Deltas list after list, in the order the lists joined the group.
        public var ordered = false
        /// The first list that fails cancels the others; the group fails with its error.
        public var failFast = false
        /// A parent item without a value its template needs fails the parent (else: skipped).
        public var missingValueFails = false

        public init(ordered: Bool = false, failFast: Bool = false, missingValueFails: Bool = false) {
            self.ordered = ordered
            self.failFast = failFast
            self.missingValueFails = missingValueFails
        }
    }

    /// What a parent list does with its items: the templates of its children, level by level,
    /// and the description each child runs with (its path replaced by the child's URL).
    private struct FanOut: Sendable {
        var templates: ArraySlice<ChildTemplate>
        var child: ListDescription
        var keepsItems: Bool
        var parentURL: String
    }

    private struct Member {
        let tag: String
        let description: ListDescription
        let keepsItems: Bool
        let client: SheafClient
        var run: ListRun?
        let fanOut: FanOut?
        /// A fan-out's parent: the templates its items fill (`GroupDelta.templates`).
        var templates: [String]? { fanOut.map { $0.templates.map(\.description) } }
        /// Ordered: deltas waiting for the list's turn.
        var waiting: [GroupDelta] = []
        var outcome: ListOutcome?
    }

    private enum Consumer {
        case callback(@Sendable (GroupDelta) -> Bool)
        case channel(SnapshotChannel<GroupDelta>)
    }

    private struct State {
        var options: Options
        var members: [Member] = []
        var consumer: Consumer?
        /// Deltas ready for the consumer, in the order it gets them, and whether a thread is
        /// handing them out (one at a time: the others only queue).
        var outbox: [GroupDelta] = []
        var outboxHead = 0
        var handing = false
        /// Ordered: the list whose deltas go out now.
        var turn = 0
        /// Lists whose last delta the consumer has not had yet.
        var open = 0
        /// Set by `cancel`, a callback's stop or a closed channel: nothing more is delivered.
        var silenced: SheafError?
        /// Set by the first failure of a `failFast` group.
        var firstFailure: SheafError?
        /// The children joined so far, by level (templates left) and URL.
        var childURLs: Set<String> = []
        /// Parents that met an item without the value their template needs (`missingValueFails`).
        var parentFailures: [Int: SheafError] = [:]
        var outcome: ListOutcome?
        var finishHandlers: [@Sendable () -> Void] = []

        mutating func nextOut() -> GroupDelta? {
            guard outboxHead < outbox.count else { return nil }
            defer {
                outboxHead += 1
                if outboxHead == outbox.count {
                    outbox.removeAll(keepingCapacity: true)
                    outboxHead = 0
                }
            }
            return outbox[outboxHead]
        }
    }

    public let client: SheafClient
    private let state: Locked<State>
    private let shares = Shares()

    init(client: SheafClient, options: Options) {
        self.client = client
        state = Locked(State(options: options))
    }

    /// How the group runs; set before it starts (`.state` after).
    public var options: Options { state.withLock { $0.options } }

    public func setOptions(_ options: Options) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            guard state.consumer == nil else { throw SheafError(.state, "a group's options are set before it starts") }
            state.options = options
        }
    }

    /// Adds a list; returns its place. Before `start` only.
    /// - Parameters:
    ///   - tag: said with each of its deltas (its path when nil).
    ///   - client: the client it runs with, when not the group's (one with headers or a transport
    ///     of the list's own); the same origin window only on the group's client.
    /// - Throws: `.state` once the group has started; what making the run throws (a description
    ///   that cannot run).
    @discardableResult
    public func add(_ description: ListDescription, tag: String? = nil, keepsItems: Bool = true,
                    client: SheafClient? = nil) throws(SheafError) -> Int {
        try join(Member(tag: tag ?? description.path, description: description, keepsItems: keepsItems,
                        client: client ?? self.client, fanOut: nil))
    }

    /// Adds a parent list whose items name child lists: `templates[0]` makes a child's URL from a
    /// parent item, `templates[1]` (if any) a grandchild's from a child's item, and so on. Each
    /// list of the last level runs `child` with its path replaced by its URL; the lists above it
    /// run with the parent's description in the same way. Returns the parent's place.
    /// - Throws: `.invalidArgument` for no template or one that does not parse; `.state` once the
    ///   group has started.
    @discardableResult
    public func addEach(parent: ListDescription, templates: [String], child: ListDescription? = nil,
                        keepsItems: Bool = true, client: SheafClient? = nil) throws(SheafError) -> Int {
        guard !templates.isEmpty else { throw SheafError(.invalidArgument, "a fan-out needs at least one child template") }
        var parsed: [ChildTemplate] = []
        for text in templates { parsed.append(try ChildTemplate(text)) }
        let client = client ?? self.client
        let parentURL = try client.firstURL(of: parent)
        let child = child ?? ListDescription(path: "")
        return try join(Member(tag: parent.path, description: parent, keepsItems: false, client: client,
                               fanOut: FanOut(templates: parsed[...], child: child, keepsItems: keepsItems,
                                              parentURL: parentURL)))
    }

    private func join(_ member: Member) throws(SheafError) -> Int {
        // The run is made now, so that a description that cannot run is refused here.
        let place = Locked<Int?>(nil)
        var member = member
        member.run = try makeRun(member, place: place)
        let joined = member
        let index = try state.withLock { (state) throws(SheafError) -> Int in
            guard state.consumer == nil else { throw SheafError(.state, "lists join a group before it starts") }
            state.members.append(joined)
            state.open += 1
            return state.members.count - 1
        }
        place.withLock { $0 = index }
        return index
    }

    /// The run of a member, its snapshots fed to the group as the member at `place` (known
    /// before the run starts).
    private func makeRun(_ member: Member, place: Locked<Int?>) throws(SheafError) -> ListRun {
        let origin = Locked<ObjectIdentifier?>(nil)
        let run = try ListRun(client: member.client, description: member.description, keepsItems: member.keepsItems,
                              consumer: .channel { [weak self] snapshot in
                                  guard let self, let index = place.withLock({ $0 }) else { return false }
                                  return self.arrived(snapshot, from: index)
                              },
                              groupShare: { [shares] window in shares.share(of: origin.withLock { $0 }, window: window) },
                              leads: member.fanOut != nil)
        origin.withLock { $0 = ObjectIdentifier(run.originPace) }
        if member.fanOut != nil {
            // A parent stopped by an item its template cannot use ends with that item's error.
            run.finishing { [weak self] outcome in
                guard let self, let index = place.withLock({ $0 }),
                      let failure = self.state.withLock({ $0.parentFailures[index] }) else { return outcome }
                return .failed(failure)
            }
        }
        return run
    }

    /// Whether `start` (or `startPulling`) has been called.
    package var hasStarted: Bool { state.withLock { $0.consumer != nil } }

    /// The lists in the group so far.
    public var count: Int { state.withLock { $0.members.count } }

    /// The run of the list at `index` (its status, resume token, prefix when kept).
    public func run(at index: Int) -> ListRun? {
        state.withLock { state in state.members.indices.contains(index) ? state.members[index].run : nil }
    }

    /// The list at `index`: its run, the description it runs and whether it keeps its items.
    package func member(at index: Int) -> (run: ListRun, description: ListDescription, keepsItems: Bool)? {
        state.withLock { state in
            guard state.members.indices.contains(index), let run = state.members[index].run else { return nil }
            let member = state.members[index]
            return (run, member.description, member.keepsItems)
        }
    }

    /// The tag of the list at `index`.
    public func tag(at index: Int) -> String? {
        state.withLock { state in state.members.indices.contains(index) ? state.members[index].tag : nil }
    }

    /// Starts every list; deltas go to `onDelta`, one at a time, on library threads (return false
    /// to stop the group: every list is cancelled and nothing more is delivered).
    /// - Throws: `.state` when the group has already started.
    public func start(onDelta: @escaping @Sendable (GroupDelta) -> Bool) throws(SheafError) {
        try begin(.callback(onDelta))
    }

    /// Starts every list, its deltas queued for `next`; `whenReady` is called (no lock held) each
    /// time `next` has something new to hand out, a delta or the end.
    package func startPulling(whenReady: (@Sendable () -> Void)? = nil) throws(SheafError) {
        let channel = SnapshotChannel<GroupDelta>()
        if let whenReady { channel.whenReady(whenReady) }
        channel.whenTaken({}, closed: { [weak self] in
            self?.silence(SheafError(.stopped, "the group's consumer stopped taking its deltas"))
        })
        try begin(.channel(channel))
    }

    private func begin(_ consumer: Consumer) throws(SheafError) {
        let runs = try state.withLock { (state) throws(SheafError) -> [(Int, ListRun)] in
            guard state.consumer == nil else { throw SheafError(.state, "the group has already been started") }
            state.consumer = consumer
            return state.members.enumerated().compactMap { index, member in member.run.map { (index, $0) } }
        }
        for (index, run) in runs { start(run, index) }
        handOut() // a group of no lists ends here
    }

    /// Starts the list at `index` at once. Its origin's window (`OriginPace`) lets in the pages
    /// lists ask for alone (page one, the next page of a walk) and a parent's pages before the
    /// pages of batches: 300 lists started together neither exceed the window nor make a list
    /// walked page by page wait behind the others' batches for each of its pages.
    private func start(_ run: ListRun, _ index: Int) {
        if let silenced = state.withLock({ $0.silenced ?? ($0.options.failFast ? $0.firstFailure.map { _ in
            SheafError(.cancelled, "another list of the group failed (fail fast)") } : nil) }) {
            // A child made after the group was cancelled (or failed fast): it never starts.
            return endUnstarted(index, silenced)
        }
        let origin = shares.started(run)
        do {
            try run.start()
            run.whenFinished { [weak self] in
                guard let self else { return }
                self.shares.ended(origin)
                self.ended(index)
            }
        } catch {
            shares.ended(origin)
            endUnstarted(index, error)
        }
    }

    /// A list that could not start ends failed, as a list does.
    private func endUnstarted(_ index: Int, _ error: SheafError) {
        let (tag, templates) = state.withLock { state in
            state.members[index].outcome = .failed(error)
            return (state.members[index].tag, state.members[index].templates)
        }
        post(GroupDelta(list: index, tag: tag, snapshot: nil, outcome: .failed(error), templates: templates))
    }

    /// Takes the next delta of a group started with `startPulling`, waiting at most
    /// `timeoutMilliseconds` (nil: as long as it takes); `.end` once the group has ended and
    /// every delta was taken.
    package func next(timeoutMilliseconds: Int?) -> SnapshotChannel<GroupDelta>.Next {
        guard case .channel(let channel) = state.withLock({ $0.consumer }) else { return .end }
        let next = channel.next(timeoutMilliseconds: timeoutMilliseconds)
        if case .snapshot(let delta) = next { taken(delta) }
        return next
    }

    /// Stops pulling: deltas not taken are dropped and the lists still running are stopped.
    package func closePulling() {
        if case .channel(let channel) = state.withLock({ $0.consumer }) { channel.close() }
    }

    /// Cancels every list; nothing more is delivered. The outcome becomes `.cancelled` unless
    /// the group had already ended.
    public func cancel() {
        silence(SheafError(.cancelled, "the group was cancelled"))
    }

    /// Cancels, then waits until no delta is being handed out (unless called from the group's
    /// callback). Afterwards the group calls nobody.
    public func close() {
        cancel()
        guard !CallbackContext.isServing(self) else { return }
        state.withLock(when: { !$0.handing }, timeoutMilliseconds: nil) { _, _ in }
    }

    /// Blocks until every list has ended and its last delta was handed out; returns the group's
    /// outcome: `.complete` when every list ended without failing, else the failure (`.partial`
    /// for lists that failed, `.cancelled`, `.stopped`, a `failFast` group's first failure).
    /// - Throws: `.reentrant` from inside a Sheaf callback; `.state` before `start`.
    public func wait() throws(SheafError) -> ListOutcome {
        guard !CallbackContext.isInsideCallback else { throw SheafError.blockingCallInsideCallback }
        guard state.withLock({ $0.consumer != nil }) else { throw SheafError(.state, "the group has not been started") }
        return state.withLock(when: { $0.outcome != nil }, timeoutMilliseconds: nil) { state, _ in state.outcome! }
    }

    /// The outcome, once the group has ended.
    public var outcome: ListOutcome? { state.withLock { $0.outcome } }

    /// Runs `body` once the group has ended (on a global queue).
    public func whenFinished(_ body: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state in
            if state.outcome == nil { state.finishHandlers.append(body) }
            return state.outcome != nil
        }
        if ended { DispatchQueue.global().async(execute: body) }
    }

    // MARK: - Deltas

    /// A member's snapshot (on its delivery thread): a parent's items make children; another's
    /// snapshot goes out, or waits for its turn. Returns false to stop the member.
    private func arrived(_ snapshot: Snapshot, from index: Int) -> Bool {
        let (member, silenced) = state.withLock { state in (state.members[index], state.silenced != nil) }
        guard !silenced else {
            // The group is being silenced and its cancel has not reached this run yet: the run
            // ends as the silencing ends it (cancelled), not as a callback that asked to stop.
            member.run?.cancel()
            return true
        }
        if let fanOut = member.fanOut {
            defer { member.run?.snapshotTaken() }
            return spawnChildren(of: snapshot.delta, fanOut: fanOut, parent: index)
        }
        post(GroupDelta(list: index, tag: member.tag, snapshot: snapshot, outcome: nil))
        return true
    }

    /// A member's run has ended (every snapshot of it posted): its last delta.
    private func ended(_ index: Int) {
        // Read before the group's lock is taken: no run's lock is ever taken inside it.
        let run = state.withLock { $0.members[index].run }
        let outcome = run?.outcome ?? .failed(SheafError(.internal, "a group's list ended without an outcome"))
        let failed = state.withLock { state -> [ListRun] in
            state.members[index].outcome = outcome
            guard state.options.failFast, state.firstFailure == nil, state.silenced == nil, let error = outcome.error else {
                return []
            }
            state.firstFailure = error
            return state.members.compactMap { $0.outcome == nil ? $0.run : nil }
        }
        if !failed.isEmpty {
            let error = SheafError(.cancelled, "another list of the group failed (fail fast)")
            for run in failed { run.fail(error) }
        }
        let (tag, templates) = state.withLock { ($0.members[index].tag, $0.members[index].templates) }
        post(GroupDelta(list: index, tag: tag, snapshot: nil, outcome: outcome, templates: templates))
    }

    /// Queues `delta` for the consumer (ordered: behind the lists before its own), then hands
    /// out what is ready.
    private func post(_ delta: GroupDelta) {
        state.withLock { state in
            guard state.silenced == nil else { return }
            if state.options.ordered, state.members[delta.list].fanOut == nil {
                state.members[delta.list].waiting.append(delta)
                Self.advanceTurns(&state)
            } else {
                state.outbox.append(delta)
            }
        }
        handOut()
    }

    /// Ordered: moves the waiting deltas of the list whose turn it is to the outbox, and the
    /// turn past every list that has posted its last delta (parents take no turn).
    private static func advanceTurns(_ state: inout State) {
        while state.turn < state.members.count {
            let member = state.members[state.turn]
            if member.fanOut == nil {
                state.outbox.append(contentsOf: member.waiting)
                state.members[state.turn].waiting = []
                // A list's last delta is the last it posts: past it, the turn moves on.
                guard member.waiting.last?.outcome != nil else { return }
            }
            state.turn += 1
        }
    }

    /// Hands out the outbox, one delta at a time, on whichever thread finds nobody doing it.
    private func handOut() {
        while true {
            let next = state.withLock { state -> (GroupDelta, Consumer)?? in
                guard !state.handing, let consumer = state.consumer else { return .some(nil) }
                guard state.silenced == nil, let delta = state.nextOut() else { return nil }
                state.handing = true
                return (delta, consumer)
            }
            guard let next else { break } // nothing to hand out: perhaps the end
            guard let (delta, consumer) = next else { return } // another thread hands out
            switch consumer {
            case .callback(let callback):
                let goOn = CallbackContext.run(for: self) { callback(delta) }
                if !goOn { silence(SheafError(.stopped, "the group's callback asked to stop")) }
                taken(delta)
            case .channel(let channel):
                if !channel.push(delta) { silence(SheafError(.stopped, "the group's consumer stopped taking its deltas")) }
            }
            state.withLock { state in
                if delta.outcome != nil { state.open -= 1 }
                state.handing = false
            }
            state.changed() // `close` waits for the hand-out to end
        }
        finishIfDone()
    }

    /// The consumer has a member's snapshot: it no longer counts against the member's window.
    private func taken(_ delta: GroupDelta) {
        guard delta.snapshot != nil else { return }
        state.withLock { state in state.members[delta.list].run }?.snapshotTaken()
    }

    /// Cancels every list and delivers nothing more; the group ends once every run has.
    private func silence(_ error: SheafError) {
        let runs = state.withLock { state -> [ListRun] in
            guard state.silenced == nil, state.outcome == nil else { return [] }
            state.silenced = error
            state.outbox = []
            state.outboxHead = 0
            return state.members.compactMap(\.run)
        }
        for run in runs { run.cancel() }
        finishIfDone()
    }

    /// Ends the group once every list has ended (and, unless silenced, its last delta went out).
    private func finishIfDone() {
        let ending = state.withLock { state -> (ListOutcome, Consumer?, [@Sendable () -> Void])? in
            guard state.outcome == nil, let consumer = state.consumer, !state.handing else { return nil }
            let runsEnded = state.members.allSatisfy { $0.outcome != nil }
            guard runsEnded, state.silenced != nil || (state.open == 0 && state.outboxHead == state.outbox.count) else {
                return nil
            }
            let outcome: ListOutcome
            if let silenced = state.silenced {
                outcome = .failed(silenced)
            } else if let first = state.firstFailure {
                outcome = .failed(first)
            } else {
                let failures = state.members.compactMap { $0.outcome?.error }
                outcome = failures.isEmpty ? .complete : .failed(SheafError(
                    .partial, "\(failures.count) of \(state.members.count) lists failed; the first: \(failures[0].message)",
                    url: failures[0].url))
            }
            state.outcome = outcome
            // Nothing is delivered any more: the callback, and what it holds, goes now.
            if case .callback = consumer { state.consumer = .callback { _ in false } }
            defer { state.finishHandlers = [] }
            return (outcome, consumer, state.finishHandlers)
        }
        guard let (_, consumer, handlers) = ending else { return }
        state.changed()
        if case .channel(let channel) = consumer { channel.finish() }
        for handler in handlers { DispatchQueue.global().async(execute: handler) }
    }

    // MARK: - Fan-out

    /// Adds and starts the child of each item of `delta` not seen before; false when an item the
    /// template cannot use fails the parent.
    private func spawnChildren(of delta: SnapshotDelta, fanOut: FanOut, parent: Int) -> Bool {
        guard let template = fanOut.templates.first else { return true }
        let missingValueFails = options.missingValueFails
        var itemStart = 1
        var children: [Member] = []
        for end in delta.itemEnds {
            defer { itemStart = end + 1 }
            switch template.expand(item: itemStart..<end, of: delta.json, parentURL: fanOut.parentURL) {
            case .failure(let failure):
                if missingValueFails {
                    // The parent stops here, and ends with this error (see `makeRun`).
                    state.withLock { $0.parentFailures[parent] = failure.error }
                    return false
                }
                client.hooks?.log(.warning) {
                    LogRecord(level: .warning, kind: .plan,
                              message: client.redactor.redact("\(failure.description): the item names no child list; skipped"))
                }
            case .success(let child):
                var description = fanOut.templates.count > 1 ? state.withLock { $0.members[parent].description } : fanOut.child
                description.path = child.url
                description.resume = nil
                let more = fanOut.templates.dropFirst()
                children.append(Member(tag: child.values.count == 1 ? child.values[0] : child.url, description: description,
                                       keepsItems: more.isEmpty ? fanOut.keepsItems : false,
                                       client: state.withLock { $0.members[parent].client },
                                       fanOut: more.isEmpty ? nil : FanOut(templates: more, child: fanOut.child,
                                                                          keepsItems: fanOut.keepsItems, parentURL: child.url)))
            }
        }
        for var child in children {
            let place = Locked<Int?>(nil)
            let joined = state.withLock { state -> Int? in
                // Once per level: a URL that is a parent at one level and a leaf at another is
                // two lists (its items are fetched as children there, delivered here).
                let key = "\(child.fanOut?.templates.count ?? 0) \(child.description.path)"
                guard state.silenced == nil, state.childURLs.insert(key).inserted else { return nil }
                state.members.append(child)
                state.open += 1
                return state.members.count - 1
            }
            guard let index = joined else { continue }
            place.withLock { $0 = index }
            do {
                child.run = try makeRun(child, place: place)
            } catch {
                endUnstarted(index, error) // its URL makes no list
                continue
            }
            state.withLock { $0.members[index].run = child.run }
            start(child.run!, index)
        }
        return true
    }
}

/// The lists of a group running at each origin (by its window, `OriginPace`), which divide that
/// window between them for what they guess: with 300 lists on a window of 64, each asks for one
/// page at a time beyond what its plan knows to exist, so no list speculates pages past its end
/// while others wait for pages they need. A lock of its own, taken inside a run's and around
/// nothing.
private final class Shares: Sendable {
    private let running = Locked<[ObjectIdentifier: Int]>([:])

    /// A list's share of `window` at `origin` (rounded up: the window is used whole); for a list
    /// not started yet (nil), the share of a list more at the busiest origin.
    func share(of origin: ObjectIdentifier?, window: Int) -> Int {
        let lists = running.withLock { running in
            origin.flatMap { running[$0] } ?? (running.values.max() ?? 0) + 1
        }
        return max(1, (window + lists - 1) / max(1, lists))
    }

    /// `run` starts: counted at its origin, which is returned.
    func started(_ run: ListRun) -> ObjectIdentifier {
        let origin = ObjectIdentifier(run.originPace)
        running.withLock { $0[origin, default: 0] += 1 }
        return origin
    }

    func ended(_ origin: ObjectIdentifier) {
        running.withLock { $0[origin, default: 1] -= 1 }
    }
}
