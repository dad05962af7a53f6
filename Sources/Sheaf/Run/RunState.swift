/// The run's decisions, as a state machine: fed events (an answer, a failure, a budget stop, a
/// probe's answer, a snapshot delivered or taken, a stop), it returns what to do (send these
/// pages, abandon those, queue these snapshots, end with this outcome). It holds no client, queue,
/// lock or fetch: `ListRun` holds it in its lock, feeds it, and carries out what it returns
/// (`RunState.Effects`). The planner (`PagePlanner`) decides which pages; this decides what their
/// answers make of the run: the prefix, its snapshots, where it resumes, and how it ends.
struct RunState {
    /// What the run knows from its start (`RunStart`) and never changes.
    struct Facts {
        /// For a partition that is not open-ended, the page where its range ends (`RunStart`).
        var partitionEnd: Int?
        /// Pages waiting for the consumer that hold the fetching back (`ClientConfiguration.window`).
        var consumerWindow: Int
        /// What one body may be (`ClientConfiguration.maxBodyBytes`).
        var maxBodyBytes: Int
        /// The list syncs (a bound or a since filter): its window opens as pages are delivered.
        var syncs: Bool
        /// Every page goes first at its origin (a fan-out's parent).
        var leads: Bool
        /// The most of the origin's window the list takes (a partition's share; `Int.max`: all).
        var windowShare: Int
        /// The list's first URL, as probes start from it.
        var firstURL: String
        /// The paging is detected from page one (not described): an end nothing confirmed is said.
        var detectsPaging = false
        /// A group's list whose resume token cannot be taken (its page is on another origin or
        /// path: a list that failed on a next link elsewhere): it fails at its start, alone, with
        /// this, and keeps the token (`keptToken`), so that handing a group's failed lists back
        /// fails this one again and runs the others.
        var startFailure: SheafError? = nil
        var keptToken: ResumeToken? = nil
        /// Takes out what a failure may have carried of a credential (`SheafClient.redacting`).
        var redacting: @Sendable (SheafError) -> SheafError = { $0 }
    }

    /// What the run's surroundings say at the moment of an event.
    struct Moment {
        /// The window of the list's origin now (`OriginPace.window`).
        var originWindow: Int
        /// A group's share of that window now (`ListRun`'s `groupShare`), if the list is in one.
        var groupShare: Int?
        /// Takes one request of the list's budget; false once the budget is spent.
        var reserve: () -> Bool
    }

    /// A fetch to make: of page `index`, or of a probe of page one's paging (`index` nil).
    struct FetchOrder: Equatable {
        var serial: Int
        var index: Int?
        var url: String
        /// The most its body may be, for a page asked for ahead of page one (`aheadBodyCap`).
        var maxBodyBytes: Int?
        /// It goes first at its origin, ahead of the pages of batches.
        var leads: Bool
        /// It waits for the consumer: started when `snapshotConsumed` releases it.
        var held: Bool
    }

    /// What an event decided, for `ListRun` to carry out in this order: fetches made, abandoned
    /// and snapshots and the ending queued under the run's lock (their order is the run's), the
    /// plan logged, then fetches started and tasks cancelled once it is released.
    struct Effects {
        var sends: [FetchOrder] = []
        /// Serials of the fetches to abandon.
        var abandons: [Int] = []
        var snapshots: [Snapshot] = []
        /// The outcome, decided now: the final step is queued behind the snapshots.
        var ending: ListOutcome?
        /// Page one was planned (from this URL): the plan is logged before its pages are sent.
        var logsPlan: String?
        /// Answers that came ahead of page one, to read and hand in now that it is planned.
        var replays: [(index: Int, serial: Int, end: FetchEnd)] = []
        /// Serials of held fetches to start now.
        var releases: [Int] = []

        mutating func append(_ other: Effects) {
            sends += other.sends
            abandons += other.abandons
            snapshots += other.snapshots
            ending = ending ?? other.ending
            logsPlan = logsPlan ?? other.logsPlan
            replays += other.replays
            releases += other.releases
        }
    }

    /// A page as it arrived and was read, before it is planned.
    struct ArrivedPage: Sendable {
        let index: Int
        let serial: Int
        let url: String
        let bodyBytes: Int
        let page: Page
        /// What detection decided, for the first page of a list that detects.
        var detection: Detector.Resolution?
        /// Its items are completed later (nested GraphQL connections, `completed`): the page is
        /// planned now, and assembled once they are in.
        var completing = false
    }

    /// How a fetch that ended goes on (`fetchEnded`).
    enum Routing {
        /// Decided: carry these out.
        case decided(Effects)
        /// The answer is to be read (with this resolution; nil: page one's detection decides it)
        /// and handed in as `arrived`, or as `failed` where it cannot be read.
        case read(Detector.Resolution?)
    }

    let facts: Facts
    private(set) var planner: PagePlanner
    private(set) var assembler: Assembler
    /// The fetch of each page in flight, by its serial: only the answer of the fetch still
    /// current counts. A page asked for ahead of page one also keeps its URL: it is capped
    /// lower, and asked for again should it come back bigger.
    private var inFlight: [Int: (serial: Int, aheadURL: String?)] = [:]
    private var serial = 0
    /// Set once the outcome is decided; later events are ignored.
    private(set) var ending: ListOutcome?
    /// The list ended complete after a full page one that nothing confirmed was its only page
    /// (`Detector.endIsUnconfirmed`).
    private(set) var endUnconfirmed = false
    /// The caller asked to stop (callback) or cancelled: no more snapshots are delivered.
    private(set) var silenced = false
    /// A snapshot was not delivered because the run was silenced: the prefix a caller sees is
    /// then short of what was assembled, so the run cannot end as a success.
    private(set) var droppedSnapshot = false
    private(set) var stoppedByCallback = false
    /// The last snapshot delivered, without its delta's items.
    private(set) var delivered: Snapshot?
    /// Of each snapshot queued for the consumer and not yet consumed, in order: the pages in
    /// the prefix through it.
    private var queuedPageTotals: [Int] = []
    /// Pages in the prefix through the last snapshot consumed.
    private var consumedPages = 0
    /// Serials of the fetches held back while the consumer is behind.
    private var held: [Int] = []
    /// The description with nothing left to detect, once known (at once when nothing is).
    private(set) var resolution: Detector.Resolution?
    /// The page with the highest index accepted so far: where the end of the list is checked.
    private var lastPage: (index: Int, page: Page)?
    /// Of each accepted page not yet in the prefix: its URL, and where the list goes on after it.
    private var pageEnds: [Int: (url: String?, next: String?, skip: Int)] = [:]
    /// Where the list goes on after the prefix assembled so far.
    private(set) var assembledResume: ResumePoint
    /// Answers for pages after page one that came before it was planned.
    private var aheadOfPageOne: [(index: Int, serial: Int, end: FetchEnd)] = []
    /// Page one, held unplanned while the usual page parameters are tried on it, and the serial
    /// of the probe's fetch in flight.
    private var probing: (probe: PagingProbe, pageOne: ArrivedPage, serial: Int?)?
    /// Pages in flight at most once page one is in, for bodies of its size to stay within what
    /// one body may be: a server that sends its whole list each time costs a page at a time.
    private var windowForPageBytes = Int.max
    /// Page one is being planned now, from this URL (its plan is logged: `Effects.logsPlan`).
    private var plansPageOne: String?
    /// Pages planned and accepted whose items are being completed, with where each goes on.
    private var completing: [Int: (url: String?, next: (url: String?, skip: Int))] = [:]
    /// The plan's ending, held while pages are being completed.
    private var heldEnding: PagePlanner.Ending?

    init(facts: Facts, planner: PagePlanner, assembler: Assembler, start: ResumePoint, resolution: Detector.Resolution?) {
        self.facts = facts
        self.planner = planner
        self.assembler = assembler
        self.assembledResume = start
        self.resolution = resolution
    }

    // MARK: Events

    /// The run starts: page one (and the pages asked for with it).
    mutating func start(_ moment: Moment) -> Effects {
        if let failure = facts.startFailure {
            var effects = Effects()
            end(.failed(failure), &effects)
            return effects
        }
        return perform(page: nil, moment) { $0.planner.start() }
    }

    /// A load-more list may fetch its pages below `gate`.
    mutating func raiseGate(to gate: Int, _ moment: Moment) -> Effects {
        perform(page: nil, moment) { $0.planner.raiseGate(to: gate) }
    }

    /// Page `index`'s fetch `serial` ended: whether and how its answer is read.
    mutating func fetchEnded(_ index: Int, serial: Int, _ end: FetchEnd, _ moment: Moment) -> Routing {
        if case .failed(let error) = end, error.code == .bodyTooLarge, let url = aheadURL(index, serial) {
            // A page asked for ahead of page one came back bigger than such a page may be: it is
            // asked for again without the cap, at once when page one's plan already needs it.
            return .decided(perform(page: (index, serial, .empty, false), moment) { state in
                guard state.planner.mode == .firstPage, !state.planner.isFinished else { return [.fetch(index: index, url: url)] }
                state.planner.forgetAhead(index)
                return []
            })
        }
        if index > 0, ending == nil, planner.mode == .firstPage, !planner.isFinished {
            // Kept until page one has decided what the list is (and how to read it).
            aheadOfPageOne.append((index, serial, end))
            return .decided(Effects())
        }
        switch end {
        case .fetched: return .read(resolution)
        case .failed(let error): return .decided(failed(index, serial: serial, error, moment))
        case .outOfBudget: return .decided(stopped(index, serial: serial, moment))
        }
    }

    /// A page was read: planned, or, for a page one that shows no way to its next page, held
    /// while the usual page parameters are tried on its URL (`PagingProbe`).
    mutating func arrived(_ arrived: ArrivedPage, _ moment: Moment) -> Effects {
        if arrived.detection?.needsProbe == true {
            guard ending == nil, inFlight[0]?.serial == arrived.serial else { return Effects() }
            var probe = PagingProbe(firstURL: facts.firstURL, pageOne: arrived.page)
            let step = probe.start()
            probing = (probe, arrived, nil)
            return follow(step, moment)
        }
        return plan(arrived, moment)
    }

    /// Page `index`'s items are complete (`ArrivedPage.completing`): it is assembled now, and the
    /// plan's ending, held for it, is carried out once no page is being completed.
    mutating func completed(_ index: Int, _ result: Result<Page, SheafError>, _ moment: Moment) -> Effects {
        var effects = Effects()
        guard ending == nil, let held = completing.removeValue(forKey: index) else { return effects }
        switch result {
        case .failure(let error):
            end(.failed(error), &effects)
        case .success(let page):
            accept(index, page, url: held.url, next: held.next, &effects)
        }
        if completing.isEmpty, let planned = heldEnding, ending == nil {
            heldEnding = nil
            end(outcome(of: planned), &effects)
        }
        return effects
    }

    /// Page `index` could not be had, or could not be read.
    mutating func failed(_ index: Int, serial: Int, _ error: SheafError, _ moment: Moment) -> Effects {
        perform(page: (index, serial, .empty, false), moment) { $0.planner.pageFailed(index, error) }
    }

    /// Page `index` was not asked for: the request budget is spent.
    mutating func stopped(_ index: Int, serial: Int, _ moment: Moment) -> Effects {
        perform(page: (index, serial, .empty, false), moment) { $0.planner.pageStopped(index, .requestBudget) }
    }

    /// The probe's fetch `serial` ended: its answer decides the probe's next step.
    mutating func probeEnded(serial: Int, _ end: FetchEnd, _ moment: Moment) -> Effects {
        guard ending == nil, let probing, probing.serial == serial else { return Effects() }
        let pageOne = probing.pageOne
        var answer: Page?
        switch end {
        case .fetched(let fetched):
            answer = try? PageReader(pageOne.detection!.description).read(fetched.response, from: fetched.url)
        case .failed:
            break
        case .outOfBudget:
            // The budget ends the list before page one is planned: without its paging, nothing
            // after it could be resumed.
            self.probing = nil
            return stopped(0, serial: pageOne.serial, moment)
        }
        self.probing!.serial = nil
        let step = self.probing!.probe.answered(answer)
        return follow(step, moment)
    }

    /// Carries out one step of the probe.
    private mutating func follow(_ step: PagingProbe.Step, _ moment: Moment) -> Effects {
        guard let pageOne = probing?.pageOne else { return Effects() }
        switch step {
        case .fetch(let url):
            serial += 1
            probing!.serial = serial
            var effects = Effects()
            effects.sends.append(FetchOrder(serial: serial, index: nil, url: url, maxBodyBytes: nil, leads: true, held: false))
            return effects
        case .adopt(let paging):
            probing = nil
            var found = pageOne
            found.detection!.description.paging = paging
            found.detection!.pagingDetected = true
            return plan(found, moment)
        case .refuse(let error):
            probing = nil
            return failed(0, serial: pageOne.serial, error, moment)
        }
    }

    /// A snapshot reached the run's consumer (`taken`: it is consumed, as a callback's is; a
    /// channel's is consumed when its consumer takes it). Returns whether the run is silenced.
    mutating func snapshotDelivered(_ snapshot: Snapshot, taken: Bool) -> (silenced: Bool, effects: Effects) {
        if silenced { droppedSnapshot = true } else { delivered = snapshot.counts }
        return (silenced, taken ? snapshotConsumed() : Effects())
    }

    /// A snapshot was consumed: it no longer counts against the window, and the fetches held
    /// back while the consumer was behind are released.
    mutating func snapshotConsumed() -> Effects {
        if !queuedPageTotals.isEmpty { consumedPages = queuedPageTotals.removeFirst() }
        var effects = Effects()
        if !consumerIsBehind, ending == nil {
            swap(&effects.releases, &held)
        }
        return effects
    }

    /// The run is stopped with `error` (a cancel, a deadline, a callback that asked to stop);
    /// `silencing`: no snapshot is delivered any more.
    /// A run not started yet is only silenced.
    mutating func stop(_ error: SheafError, byCallback: Bool, silencing: Bool, started: Bool) -> Effects {
        if silencing { silenced = true }
        if byCallback { stoppedByCallback = true }
        var effects = Effects()
        guard started, ending == nil else { return effects }
        end(.failed(error), &effects)
        return effects
    }

    // MARK: Deciding

    /// Whether a window of pages waits for the consumer. Counted in pages, not snapshots: a
    /// snapshot holds every page that arrived ahead of a slow one (up to twice the window).
    private var consumerIsBehind: Bool {
        (queuedPageTotals.last ?? consumedPages) - consumedPages >= facts.consumerWindow
    }

    /// The one answer to how many pages may be in flight: the origin's window (its adaptive
    /// size, its budget, its quota: `OriginPace`), the list's share of it (a partition's, and a
    /// group's for the pages it guesses), what bodies of page one's size allow, and a sync's
    /// opening window.
    func inFlightLimit(_ moment: Moment) -> Int {
        // A group's share bounds what the list would guess (page one, speculative pages); the
        // pages its plan knows to exist take what the origin's window has.
        let share = planner.asksOnlyForKnownPages ? nil : moment.groupShare
        // A list that syncs mostly fetches a page or two of what is new: a page in flight per
        // page delivered (at least one), opening up as it keeps finding new items.
        let sync = facts.syncs ? max(1, assembler.pageCount) : .max
        return min(moment.originWindow, facts.windowShare, share ?? .max, windowForPageBytes, sync)
    }

    /// The URL of page `index`'s fetch asked for ahead of page one, when `serial` is that fetch.
    private func aheadURL(_ index: Int, _ serial: Int) -> String? {
        inFlight[index].flatMap { $0.serial == serial ? $0.aheadURL : nil }
    }

    /// Plans a page that arrived (the first one with what detection decided).
    private mutating func plan(_ arrived: ArrivedPage, _ moment: Moment) -> Effects {
        let index = arrived.index
        return perform(page: (index, arrived.serial, arrived.page, arrived.completing), moment) { state in
            if let detection = arrived.detection, state.resolution == nil {
                state.resolution = detection
                state.planner.adopt(detection.description.paging, pagesSignalTheEnd: PageReader(detection.description).pagesSignalTheEnd)
            }
            if index == 0 {
                state.plansPageOne = arrived.url
                state.windowForPageBytes = max(1, state.facts.maxBodyBytes / max(1, arrived.bodyBytes))
                state.planner.window = min(state.planner.window, state.windowForPageBytes)
            }
            return state.planner.pageArrived(index, arrived.page)
        }
    }

    /// Asks the planner (through `decide`) and decides what its actions make of the run, under
    /// one hold of the run's lock: no other page's ending slips in between a decision and its
    /// effect.
    private mutating func perform(page: (index: Int, serial: Int, page: Page, completes: Bool)?, _ moment: Moment,
                                  _ decide: (inout RunState) -> [PagePlanner.Action]) -> Effects {
        var effects = Effects()
        guard ending == nil else { return effects }
        if let page {
            guard inFlight[page.index]?.serial == page.serial else { return effects } // abandoned
            inFlight[page.index] = nil
        }
        planner.window = inFlightLimit(moment)
        var actions = decide(&self)[...]
        // Logged before the pages it plans are sent, so the log reads in order.
        swap(&effects.logsPlan, &plansPageOne)
        while let action = actions.popFirst() {
            switch action {
            case .fetch(let index, let url):
                guard ending == nil else { continue }
                // The page takes its request of the budget now, in the plan's order: a page
                // planned later must not spend the request of one planned before it.
                guard moment.reserve() else {
                    actions += planner.pageStopped(index, .requestBudget)
                    continue
                }
                serial += 1
                // A page asked for before page one has shown what the list is may be of a server
                // that sends its whole list each time: a window of those must not all be held.
                let capped = index > 0 && planner.mode == .firstPage
                // The one page a list asks for with none other in flight (page one, the next of
                // a walk) goes first at its origin: a walk never waits behind batches.
                let order = FetchOrder(serial: serial, index: index, url: url,
                                       maxBodyBytes: capped ? RunStart.aheadBodyCap(pagesAhead: planner.pagesAhead) : nil,
                                       leads: facts.leads || inFlight.isEmpty, held: consumerIsBehind)
                inFlight[index] = (serial, capped ? url : nil)
                if order.held { held.append(serial) }
                effects.sends.append(order)
            case .accept(let index), .acceptEmpty(let index):
                let content: Page
                if case .acceptEmpty = action {
                    content = .empty
                } else if let page, page.index == index {
                    content = page.page
                } else {
                    continue
                }
                guard ending == nil else { continue }
                if case .accept = action, page?.index == index, page?.completes == true {
                    completing[index] = (content.url, (planner.continuation(after: index, content), 0))
                    continue
                }
                let next: (url: String?, skip: Int)
                if action == .acceptEmpty(index: index) {
                    next = (nil, 0)
                } else if planner.mode == .pieces {
                    next = planner.pieceContinuation(after: index, content, kept: content.items.indices)
                } else {
                    next = (planner.continuation(after: index, content), 0)
                }
                accept(index, content, url: content.url, next: next, &effects)
            case .acceptPart(let index, let items, let endsPiece):
                guard ending == nil, let page, page.index == index else { continue }
                accept(index, page.page.part(items, endsList: endsPiece), url: page.page.url,
                       next: planner.pieceContinuation(after: index, page.page, kept: items), &effects)
            case .jump(let index, let next):
                assembler.jump(after: index, to: next)
            case .cancel(let indices):
                effects.abandons += indices.compactMap { inFlight.removeValue(forKey: $0)?.serial }
            case .discard(let index):
                assembler.discard(after: index)
                pageEnds = pageEnds.filter { $0.key <= index }
                if let last = lastPage, last.index > index { lastPage = nil }
            case .finish(let planned):
                if completing.isEmpty || ending != nil { end(outcome(of: planned), &effects) } else { heldEnding = planned }
            }
        }
        if page?.index == 0, planner.mode != .firstPage || planner.isFinished {
            // The answers that came ahead of page one are handed in now (those of pages the plan
            // abandoned are ignored, as any abandoned answer is).
            swap(&effects.replays, &aheadOfPageOne)
            if ending != nil { effects.replays = [] }
        }
        return effects
    }

    /// Hands page `index` (as the plan accepted it) to the assembler, queues the snapshots it
    /// makes, and ends the run where the page reached a limit, a bound or a repeat.
    private mutating func accept(_ index: Int, _ content: Page, url: String?, next: (url: String?, skip: Int),
                                 _ effects: inout Effects) {
        if index >= (lastPage?.index ?? 0) { lastPage = (index, content) }
        pageEnds[index] = (url, next.url, next.skip)
        let deltas = assembler.add(index, content)
        for (delta, last) in zip(deltas, assembler.deltaLastPages) {
            assembledResume = resumePoint(after: delta, lastPage: last)
            effects.snapshots.append(Snapshot(delta: delta, expectedItems: planner.expectedTotal,
                                              expectedPages: planner.expectedPages, resumePoint: assembledResume))
            queuedPageTotals.append(delta.pages)
        }
        if assembler.reachedLimit {
            end(.finished(.itemLimit), &effects)
        }
        if assembler.reachedBound {
            // Pages in flight past the bound are abandoned, and none is asked for.
            end(.complete, &effects)
        }
        if let repeated = assembler.repeatedPage {
            end(.failed(SheafError(.repeatedPage,
                "page \(repeated + 1) repeats the items of page \(repeated) byte for byte: the server ignores the paging "
                + "parameter, or the list is described with the wrong one", url: lastPage?.page.url,
                hint: "check the paging parameter (--paging), or --paging single")), &effects)
        }
    }

    /// Where the list goes on after the prefix that now ends with `delta` (page `last`): after
    /// its last page, or inside it where the item limit cut it.
    private mutating func resumePoint(after delta: SnapshotDelta, lastPage last: Int) -> ResumePoint {
        let ends = pageEnds[last]
        pageEnds = pageEnds.filter { $0.key > last }
        var point = ResumePoint(url: ends?.next, skip: ends?.skip ?? 0, itemsBefore: assembledResume.itemsBefore + delta.items)
        if let cut = assembler.cut, cut.index == last, let url = ends?.url {
            point.url = url
            point.skip = cut.consumed
        }
        return point
    }

    /// The run's outcome from how the planner ended it.
    private mutating func outcome(of ending: PagePlanner.Ending) -> ListOutcome {
        let itemCount = assembledResume.itemsBefore // every run's items, for the totals
        switch ending {
        case .stopped(let index, let reason):
            if reason == .pageBudget, index == facts.partitionEnd { return .complete }
            return .finished(reason)
        case .failed(_, let error):
            return .failed(error)
        case .allPages(let total, let missing):
            if assembler.reachedLimit { return .finished(.itemLimit) }
            if assembler.reachedBound { return .complete }
            guard let total, total != itemCount || !missing.isEmpty else {
                // Never silently short: the last page must not signal more than was followed.
                if let resolved = resolution?.description, resolved.paging != .single, let last = lastPage,
                   let error = Detector.unfollowed(last.page, resolved, itemCount: itemCount) {
                    return .failed(error)
                }
                if facts.detectsPaging, let resolved = resolution?.description, let last = lastPage {
                    endUnconfirmed = Detector.endIsUnconfirmed(last.page, pages: assembler.pageCount, resolved)
                }
                return .complete
            }
            var message = "the server reported \(total) items but \(itemCount) arrived"
            var hint: String?
            if itemCount > total, !assembler.deduplicates {
                // Nothing to tell a repeat by: an item added to the list while it was read pushes
                // one already read onto the next page.
                message += ", some perhaps twice (the list grew while it was read, pushing items onto the next page)"
                hint = "--id POINTER, sheaf_list_set_signal(IDENTITY, ITEM, POINTER): an item seen before is dropped"
            }
            if !missing.isEmpty {
                message += "; pages " + missing.map { String($0 + 1) }.joined(separator: ", ") + " answered 404"
            }
            return .failed(SheafError(.incomplete, message, hint: hint))
        }
    }

    /// Decides the outcome (once): every fetch the run holds is abandoned (a fetch's completion
    /// holds the run: one left behind would keep the run and its pages alive for ever).
    private mutating func end(_ outcome: ListOutcome, _ effects: inout Effects) {
        guard ending == nil else { return }
        _ = planner.stop()
        held.removeAll()
        effects.abandons += inFlight.values.map(\.serial) + (probing?.serial.map { [$0] } ?? [])
        inFlight.removeAll()
        probing = nil
        aheadOfPageOne = []
        // The one place every failure passes: a server, a next link or a redirect may have
        // carried a credential into it.
        if case .failed(let error) = outcome {
            ending = .failed(facts.redacting(error))
        } else {
            ending = outcome
        }
        effects.ending = ending
    }

    // MARK: Telling

    /// The description as the run reads it (detected parts resolved once page one is in), with
    /// the plan chosen, as a JSON object; for a list that syncs, with the state it got to through
    /// `snapshot` (`ListRun.descriptionJSON`). `url` names the list in that state.
    func json(_ description: ListDescription, url: String, syncThrough snapshot: Snapshot? = nil) -> [UInt8] {
        let plan: String?
        switch planner.mode {
        case .firstPage: plan = ending != nil && resolution != nil ? "sequential" : nil
        case .parallel: plan = "parallel"
        case .speculative: plan = "speculative"
        case .sequential: plan = resolution?.description.paging == .single ? "single" : "sequential"
        case .pieces: plan = "split"
        }
        let splitPlan = description.split == nil ? nil
            : planner.split?.summary ?? planner.unsplitReason.map { "walked as one piece: \($0)" }
        let sync = description.syncState(greatest: snapshot?.delta.greatest).map { (list: url, state: $0) }
        return (resolution?.description ?? description).json(resolution: resolution, plan: plan, sync: sync, splitPlan: splitPlan)
    }

    /// How the list is fetched, in words, once page one has decided it (the plan's log record).
    func planSummary(_ configuration: ClientConfiguration) -> String {
        let windowText = configuration.adaptsWindow && configuration.window < configuration.maxWindow
            ? "a window of \(planner.window) adapting up to \(configuration.maxWindow)" : "\(planner.window)"
        switch planner.mode {
        case .parallel(let pages): return "the \(pages) pages are addressed and their count is known: \(windowText) in flight"
        case .speculative: return "the pages are addressed, their count unknown: \(windowText) in flight ahead of the end"
        case .sequential, .firstPage: return "each page names the next (a link or a cursor): one at a time"
            + (planner.unsplitReason.map { " (not split: \($0))" } ?? "")
        case .pieces: return "a cursor list with a range filter: \(planner.split?.summary ?? ""), each walked by its cursor, "
            + "\(windowText) in flight"
        }
    }

    /// The outcome, once the last snapshot was delivered: the ending, or the stop a callback
    /// asked for; a cancel that came after the end was decided but before the consumer had
    /// every snapshot ends an OK list cancelled (an OK list is always whole).
    var finalOutcome: ListOutcome? {
        guard var outcome = ending else { return nil }
        if stoppedByCallback {
            outcome = .failed(SheafError(.stopped, "the snapshot callback asked to stop"))
        } else if droppedSnapshot, outcome.error == nil {
            outcome = .failed(SheafError(.cancelled, "the list was cancelled"))
        }
        return outcome
    }
}
