import Dispatch

/// One run of one list: its decisions are a state machine (`RunState`, started by `RunStart`);
/// the run holds it in a lock, feeds it the fetches' endings, the consumer's pace and the
/// caller's stops, and carries out what it decides: fetches made, started and abandoned,
/// snapshots delivered in order on a serial queue of its own, the outcome.
public final class ListRun: Sendable {
    /// The run's decisions, and what carries them out: the fetches they made, the caller's
    /// finishing steps, the outcome once known.
    struct Core {
        var machine: RunState
        /// The fetches made and neither ended nor abandoned, by serial.
        var fetches: [Int: Fetch] = [:]
        var started = false
        /// `whenFinished` bodies given before the end.
        var finishHandlers: [@Sendable () -> Void] = []
        /// Runs after the last snapshot callback, before the outcome is known to anyone, and
        /// may replace it (`finishing(_:)`).
        var finishing: (@Sendable (ListOutcome) -> ListOutcome)?
        var outcome: ListOutcome?
        /// Ends the run when the caller's deadline passes.
        var deadline: Deadline?
    }

    /// What to do once the lock is released: start fetches, cancel the transport's attempts of
    /// those abandoned, and read the answers that came ahead of page one.
    private struct Later {
        var starts: [Fetch] = []
        var cancels: [any TransportTask] = []
        var replays: [(index: Int, serial: Int, end: FetchEnd)] = []
        /// The run's final step, queued once the transport has seen every cancel: `wait()`
        /// returns only then.
        var ending: (@Sendable () -> Void)?

        func run(startingOn queue: DispatchQueue? = nil) {
            cancels.forEach { $0.cancel() }
            ending?()
            if let queue, !starts.isEmpty {
                queue.async { [starts] in starts.forEach { $0.start() } }
            } else {
                starts.forEach { $0.start() }
            }
        }
    }

    let client: SheafClient
    let description: ListDescription
    /// What a resume token of this run is bound to (`ResumeToken.fingerprint`).
    let fingerprint: UInt64
    /// Where this run starts.
    let startPoint: ResumePoint
    /// How each page is asked for, and completed where its nodes' connections have more pages.
    private let pageTemplate: FetchTemplate, nested: NestedCompletion?
    /// The first page's URL (a partition's: its range's first), before a `since` parameter, with no
    /// credential or secret value: the list as messages, a sync state and `sheaf_list_url` name it.
    package let url: String
    let state: Locked<Core>
    private let delivery = DispatchQueue(label: "sheaf.list.snapshots")
    /// The caller's callback or channel feed, dropped at the end. Boxed in a class: a closure
    /// stored in a `Synchronization.Mutex` and read back through `withLock` was re-wrapped in one
    /// more reabstraction thunk on every read, so a long stream grew quadratically slow and
    /// finally overflowed the stack.
    private let onSnapshot: Locked<SnapshotCallbackBox?>
    private let requests: RequestCounters
    /// The window of the list's origin, shared with the client's other lists there.
    private let pace: OriginPace
    /// The share of the origin's window a group gives the list now (`ListGroup`); read without
    /// the group's lock (the group keeps it in a lock of its own).
    private let groupShare: (@Sendable (Int) -> Int)?
    /// Whether a delivered snapshot stays pending until `snapshotTaken` (a channel's consumer).
    private let takesLater: Bool

    /// Requests sent so far, retries and redirects included.
    public var requestsMade: Int { requests.requestsMade }
    /// Of those, answers the response cache revalidated (a 304 standing for a stored page).
    public var requestsRevalidated: Int { requests.requestsRevalidated }
    /// What the origin's rate limit has left, and the milliseconds until it resets; nil: unknown.
    public var quota: (remaining: Int, resetsInMilliseconds: Int)? { pace.quota(route: WindowLimiter.route(of: url)) }
    /// Requests waiting for an answer now.
    public var requestsInFlight: Int { requests.inFlight }
    /// Requests the list's origin may have in flight now, this list's and the client's other
    /// lists' there together (see `ClientConfiguration.adaptsWindow`).
    public var window: Int { pace.window }

    /// Whether the list ended at its bound (`ListDescription.until`): complete for what it was
    /// asked (every item newer than the bound), the item at the bound and those after it not
    /// delivered. (Not a `StopReason` of its own: a new case would break a Swift caller's
    /// exhaustive `switch`, and 1.0 froze the Swift API; C has `SHEAF_STOP_BOUND`.)
    public var reachedBound: Bool { state.withLock { $0.outcome == .complete && $0.machine.assembler.reachedBound } }

    /// Whether the list ended complete after one full page that nothing confirmed was its last:
    /// its paging was detected, page one read no signal of more or of the end, and it held a
    /// page size's worth of items (`Detector.endIsUnconfirmed`). The items are every item the
    /// server showed; a server paging by a parameter the request did not name has more. (Not a
    /// `StopReason` of its own, as `reachedBound`; C has `SHEAF_STOP_UNCONFIRMED`.)
    public var endUnconfirmed: Bool { state.withLock { $0.outcome == .complete && $0.machine.endUnconfirmed } }

    /// The window the list shares with the client's other lists at its origin.
    var originPace: OriginPace { pace }

    /// - Parameter pageGate: for a load-more list (`ListPager`), the pages it may fetch before
    ///   `raisePageGate`; each of them is a snapshot of its own.
    /// - Parameter groupShare: for a list of a group, its share of the origin's window (given
    ///   that window) at each moment: the lists of a group divide it between them.
    /// - Parameter leads: every page goes first at its origin (a fan-out's parent, whose pages
    ///   make the work of the others), not only those asked for alone.
    init(client: SheafClient, description: ListDescription, keepsItems: Bool, pageGate: Int? = nil,
         consumer: SnapshotConsumer, groupShare: (@Sendable (Int) -> Int)? = nil, leads: Bool = false) throws(SheafError) {
        let onSnapshot: (@Sendable (Snapshot) -> Bool)?
        switch consumer {
        case .nobody: (onSnapshot, takesLater) = (nil, false)
        case .callback(let callback): (onSnapshot, takesLater) = (callback, false)
        case .channel(let feed): (onSnapshot, takesLater) = (feed, true)
        }
        let start = try RunStart(client: client, description: description, keepsItems: keepsItems, pageGate: pageGate,
                                 deliversItems: onSnapshot != nil, groupShare: groupShare, leads: leads)
        self.client = client
        self.description = start.description
        url = start.url
        fingerprint = start.fingerprint
        startPoint = start.point
        (pageTemplate, nested) = (start.pageTemplate, NestedCompletion(client: client, description: start.description))
        pace = start.pace
        requests = RequestCounters(budget: start.description.maxRequests)
        self.groupShare = groupShare
        state = Locked(Core(machine: start.state))
        self.onSnapshot = Locked(onSnapshot.map(SnapshotCallbackBox.init))
    }

    /// Starts fetching; returns at once. A run starts once.
    public func start() throws(SheafError) {
        try state.withLock { (core) throws(SheafError) in
            guard !core.started else { throw SheafError(.state, "the list has already been started") }
            core.started = true
            if let milliseconds = description.deadlineMilliseconds {
                core.deadline = Deadline(after: milliseconds) { [weak self] in
                    self?.stop(SheafError(.deadline, "the list did not end within its deadline of \(milliseconds) ms"),
                               byCallback: false, silencing: false)
                }
            }
        }
        feedNow { machine, moment in machine.start(moment) }
    }

    /// Blocks until the run has finished and every snapshot callback has returned.
    /// - Throws: `.reentrant` when called from inside a Sheaf callback, `.state` before `start()`.
    public func wait() throws(SheafError) -> ListOutcome {
        guard !CallbackContext.isInsideCallback else {
            throw SheafError.blockingCallInsideCallback
        }
        guard state.withLock({ $0.started }) else { throw SheafError(.state, "the list has not been started") }
        return state.withLock(when: { $0.outcome != nil }, timeoutMilliseconds: nil) { core, _ in core.outcome! }
    }

    /// Runs `body` once the run has finished and every snapshot callback has returned (on a
    /// global queue); given before `start()`, once the run that starts then has finished.
    public func whenFinished(_ body: @escaping @Sendable () -> Void) {
        let finished = state.withLock { core in
            if core.outcome == nil { core.finishHandlers.append(body) }
            return core.outcome != nil
        }
        if finished { DispatchQueue.global().async(execute: body) }
    }

    /// Runs `body` on the delivery thread after the last snapshot callback and before `wait()`
    /// returns; the outcome it returns is the run's (an output that could not be written turns
    /// the stop it caused into its own failure). Given before `start()`.
    package func finishing(_ body: @escaping @Sendable (ListOutcome) -> ListOutcome) {
        state.withLock { $0.finishing = body }
    }

    /// The outcome, once the run has finished; nil before.
    public var outcome: ListOutcome? { state.withLock { $0.outcome } }

    /// Lets a load-more run fetch its pages below `gate` (see `ListPager`).
    func raisePageGate(to gate: Int) {
        feedNow { machine, moment in machine.raiseGate(to: gate, moment) }
    }

    /// Stops the run: in-flight requests are abandoned, no snapshot is delivered any more, and
    /// the outcome becomes `.cancelled` unless it was already decided.
    public func cancel() {
        stop(SheafError(.cancelled, "the list was cancelled"), byCallback: false)
    }

    /// Cancels, then waits until no snapshot callback is running (unless called from one).
    /// Afterwards no callback of this run will run.
    public func close() {
        cancel()
        if !CallbackContext.isServing(self) {
            delivery.sync {}
        }
    }

    /// Ends the run with `error` (a group's fan-out that finds an item it cannot use): in-flight
    /// requests are abandoned and no snapshot is delivered any more.
    package func fail(_ error: SheafError) {
        stop(error, byCallback: false)
    }

    /// The caller of a pulled run stops taking snapshots: the run stops as when a callback asks to.
    package func stopTaking() {
        stop(SheafError(.stopped, "the snapshot callback asked to stop"), byCallback: true)
    }

    /// A pulled snapshot was taken by the caller: it no longer counts against the window. The
    /// fetches it releases start on a library thread, not on the caller's (a language runtime's
    /// thread that takes snapshots should spend nothing on them).
    package func snapshotTaken() {
        var later = Later()
        state.withLock { core in carryOut(core.machine.snapshotConsumed(), &core, &later) }
        later.run(startingOn: .global())
    }

    // MARK: Feeding the machine

    /// The surroundings of an event, read outside the run's lock (a group's share takes the
    /// group's lock).
    private func currentMoment() -> RunState.Moment {
        let origin = pace.window
        return RunState.Moment(originWindow: origin, groupShare: groupShare?(origin), reserve: { [requests] in requests.reserve() })
    }

    /// Feeds the machine one event under the run's lock and carries out what it decides; what
    /// must wait for the lock's release goes into `later`.
    /// `ended`: the serial of the fetch whose ending this is, no longer the run's to abandon.
    private func feed(_ later: inout Later, ended: Int? = nil, _ event: (inout RunState, RunState.Moment) -> RunState.Effects) {
        let moment = currentMoment()
        state.withLock { core in
            if let ended { core.fetches[ended] = nil }
            carryOut(event(&core.machine, moment), &core, &later)
        }
    }

    /// As `feed`, and carries out at once what waits for the lock.
    private func feedNow(ended: Int? = nil, _ event: (inout RunState, RunState.Moment) -> RunState.Effects) {
        var later = Later()
        feed(&later, ended: ended, event)
        handIn(&later)
    }

    /// Carries out what the machine decided, under the run's lock: fetches made (and held, or
    /// started once the lock is released), abandoned (their requests counted out before the end
    /// can be seen, their attempts cancelled later: a transport may call back as it cancels),
    /// the plan logged, snapshots queued in the order they were decided, and the final step
    /// after them once the lock is released and the cancels are made (no new snapshot can be
    /// decided after the end).
    private func carryOut(_ effects: RunState.Effects, _ core: inout Core, _ later: inout Later) {
        var starts: [Int] = []
        for order in effects.sends {
            core.fetches[order.serial] = makeFetch(order)
            if !order.held { starts.append(order.serial) }
        }
        later.cancels += effects.abandons.compactMap { core.fetches.removeValue(forKey: $0)?.abandon() }
        if let pageOne = effects.logsPlan, let hooks = client.hooks { logPlan(hooks, core.machine, url: pageOne) }
        for snapshot in effects.snapshots {
            delivery.async { [self] in deliver(snapshot) }
        }
        if effects.ending != nil {
            core.deadline?.cancel()
            core.deadline = nil
            // Whatever fetch is left no longer matters, and would hold the run alive.
            later.cancels += core.fetches.values.compactMap { $0.abandon() }
            core.fetches.removeAll()
            later.ending = { [self] in delivery.async { [self] in finish() } }
        }
        later.starts += (starts + effects.releases).compactMap { core.fetches[$0] }
        later.replays += effects.replays
    }

    /// A fetch of the run, as `order` says.
    private func makeFetch(_ order: RunState.FetchOrder) -> Fetch {
        let serial = order.serial
        guard let index = order.index else {
            return Fetch(client: client, url: order.url, template: pageTemplate, requests: requests, pace: pace) { [self] end in
                offTheTransportThread(for: end) { [self] in feedNow(ended: serial) { $0.probeEnded(serial: serial, end, $1) } }
            }
        }
        var template = pageTemplate
        if let cap = order.maxBodyBytes { template.maxBodyBytes = cap }
        return Fetch(client: client, url: order.url, template: template, requests: requests, pace: pace,
                     reserved: true, leads: order.leads) { [self] end in
            offTheTransportThread(for: end) { [self] in
                var later = Later()
                fetchEnded(index, serial: serial, end, &later)
                handIn(&later)
            }
        }
    }

    /// Hands in the answers that came ahead of page one (now that it is planned), then carries
    /// out what waits for the lock: every such answer is planned before a new request starts (a
    /// budget that one would exceed must not end the list before pages that arrived are in).
    private func handIn(_ later: inout Later) {
        while !later.replays.isEmpty {
            let (index, serial, end) = later.replays.removeFirst()
            fetchEnded(index, serial: serial, end, &later)
        }
        later.run()
    }

    /// Runs `body` for a fetch that ended: on the global pool with an answer (reading one is CPU work).
    private func offTheTransportThread(for end: FetchEnd, _ body: @escaping @Sendable () -> Void) {
        if case .fetched = end { DispatchQueue.global().async(execute: body) } else { body() }
    }

    /// Page `index`'s fetch `serial` ended: the machine routes it, and an answer is read here,
    /// outside the lock (page one's with detection), then handed in.
    private func fetchEnded(_ index: Int, serial: Int, _ end: FetchEnd, _ later: inout Later) {
        var routing = RunState.Routing.decided(RunState.Effects())
        feed(&later, ended: serial) { machine, moment in
            routing = machine.fetchEnded(index, serial: serial, end, moment)
            guard case .decided(let effects) = routing else { return RunState.Effects() }
            return effects
        }
        guard case .read(let resolution) = routing, case .fetched(let fetched) = end else { return }
        let response = fetched.response
        if index == 0, (200..<300).contains(response.status) { client.noteAccepted(startPoint.url ?? fetched.url) }
        var arrived: RunState.ArrivedPage
        do {
            // The first page: whatever the description left open is decided here, once.
            let detection = resolution == nil ? try Detector.resolve(description, response, url: fetched.url) : nil
            let page = try PageReader((resolution ?? detection)!.description).read(response, from: fetched.url)
            arrived = RunState.ArrivedPage(index: index, serial: serial, url: fetched.url, bodyBytes: response.body.count,
                                           page: page, detection: detection)
        } catch {
            return feed(&later) { $0.failed(index, serial: serial, error, $1) }
        }
        let completion = nested?.completion(of: arrived.page) { [self] page in feedNow { $0.completed(index, page, $1) } }
        arrived.completing = completion != nil
        feed(&later) { $0.arrived(arrived, $1) }
        completion?() // after the page is handed in: its completion may end at once
    }

    /// Ends the run with `error`; `silencing`, no snapshot is delivered any more (a deadline
    /// still delivers what was assembled before it).
    private func stop(_ error: SheafError, byCallback: Bool, silencing: Bool = true) {
        var later = Later()
        state.withLock { core in
            carryOut(core.machine.stop(error, byCallback: byCallback, silencing: silencing, started: core.started), &core, &later)
        }
        later.run()
    }

    // MARK: Delivering

    private func deliver(_ snapshot: Snapshot) {
        var later = Later()
        let silenced = state.withLock { core in
            let (silenced, effects) = core.machine.snapshotDelivered(snapshot, taken: !takesLater)
            carryOut(effects, &core, &later)
            return silenced
        }
        later.run()
        guard !silenced, let callback = onSnapshot.withLock({ $0 })?.callback else { return }
        let goOn = CallbackContext.run(for: self) { callback(snapshot) }
        if !goOn { stop(SheafError(.stopped, "the snapshot callback asked to stop"), byCallback: true) }
    }

    /// The final step, behind every snapshot: the outcome (as the finishing step makes it: it is
    /// dropped here, with what it holds), the caller's context dropped (no callback after the
    /// end), then `wait()` and `whenFinished` told.
    private func finish() {
        nested?.cancel() // the nested connections of pages that will not be delivered
        let (ending, finishing) = state.withLock { core in
            defer { core.finishing = nil }
            return (core.machine.finalOutcome!, core.finishing)
        }
        // A caller's code may run in it (a write function): a blocking call there is refused.
        let outcome = finishing.map { body in CallbackContext.run(for: self) { body(ending) } } ?? ending
        onSnapshot.withLock { $0 = nil }
        let handlers = state.withLock { core in
            core.outcome = outcome
            defer { core.finishHandlers = [] }
            return core.finishHandlers
        }
        state.changed()
        handlers.forEach { DispatchQueue.global().async(execute: $0) }
    }

    /// One record of how the list is fetched, once page one has decided it.
    private func logPlan(_ hooks: Hooks, _ machine: RunState, url pageOne: String) {
        hooks.log(.info) {
            let url = client.redactor.redact(pageOne)
            let why = machine.planSummary(client.configuration)
            let json = String(decoding: machine.json(description, url: self.url), as: UTF8.self)
            return LogRecord(level: .info, kind: .plan, message: "\(url): \(why); the list as read: \(client.redactor.redact(json))",
                             url: url)
        }
    }
}

/// Holds a snapshot callback by reference (see `ListRun.onSnapshot`).
private final class SnapshotCallbackBox: Sendable {
    let callback: @Sendable (Snapshot) -> Bool

    init(_ callback: @escaping @Sendable (Snapshot) -> Bool) {
        self.callback = callback
    }
}
