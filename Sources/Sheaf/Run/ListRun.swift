import Dispatch

/// How a list ended: where it should (complete, or where its caller asked), or failed. The
/// reason is data, never an error caught and turned back into a success.
public enum ListOutcome: Sendable, Equatable {
    /// It ended without failing, for this reason.
    case finished(StopReason)
    /// It failed, was stopped or was cancelled; the items delivered before stay delivered.
    case failed(SheafError)

    /// Every page arrived and the items agree with the server's total (when it gave one).
    public static let complete = ListOutcome.finished(.complete)

    /// Why a list that ended without failing stopped; nil for a failure.
    public var stopReason: StopReason? {
        if case .finished(let reason) = self { return reason }
        return nil
    }

    /// The error of a failed list; nil for every other outcome.
    public var error: SheafError? {
        if case .failed(let error) = self { return error }
        return nil
    }
}

/// Why a list ended without failing: each is a success (`SHEAF_OK` in C), the reason is data.
public enum StopReason: Sendable, Equatable {
    /// Every page arrived and the items agree with the server's total (when it gave one).
    case complete
    /// The caller's item limit was reached.
    case itemLimit
    /// The caller's page budget was reached; the resume token goes on from there.
    case pageBudget
    /// The caller's request budget was reached; the resume token goes on from there.
    case requestBudget
}

/// One snapshot: what the ordered prefix gained, and what the list expects in all.
public struct Snapshot: Sendable {
    public var delta: SnapshotDelta
    /// The server's total, when known.
    public var expectedItems: Int?
    /// The pages the plan expects, when known.
    public var expectedPages: Int?
    /// Where the list goes on after this snapshot.
    var resumePoint: ResumePoint

    /// The snapshot without its delta's items: what is kept of it to count and to resume.
    package var counts: Snapshot {
        var counts = self
        counts.delta.json = []
        counts.delta.itemEnds = []
        return counts
    }
}

/// Who takes a run's snapshots, which decides when a snapshot stops holding the fetching back
/// (the one rule: while the snapshots queued and not yet taken hold a window of pages, no new
/// request starts).
package enum SnapshotConsumer: Sendable {
    /// Nobody: the prefix is read once the run has ended (fetch-all); snapshots carry no items.
    case nobody
    /// Code called on the run's delivery queue, in order: a snapshot is taken when it is called.
    /// It returns false to stop the run.
    case callback(@Sendable (Snapshot) -> Bool)
    /// A channel, fed on the run's delivery queue: a snapshot is taken when the channel's
    /// consumer takes it (`ListRun.snapshotTaken`). The feed returns false to stop the run.
    case channel(feed: @Sendable (Snapshot) -> Bool)
}

/// One run of one list: plans pages, fetches them in a window, assembles the ordered prefix and
/// delivers snapshots on a serial queue of its own.
public final class ListRun: Sendable {
    private struct State {
        var planner: PagePlanner
        var assembler: Assembler
        /// The fetch of each page in flight, with a serial number: a page whose fetch was
        /// abandoned may be fetched again (a speculative plan that ended early), and only the
        /// answer of the fetch still current counts.
        /// A page asked for ahead of page one also keeps its URL: it is capped lower, and asked
        /// for again should it come back bigger.
        var fetches: [Int: (serial: Int, fetch: Fetch, aheadURL: String?)] = [:]
        var fetchSerial = 0
        var started = false
        /// `whenFinished` bodies given before the end.
        var finishHandlers: [@Sendable () -> Void] = []
        /// Runs after the last snapshot callback, before the outcome is known to anyone, and
        /// may replace it (`finishing(_:)`).
        var finishing: (@Sendable (ListOutcome) -> ListOutcome)?
        /// Set once the outcome is decided; later events are ignored.
        var ending: ListOutcome?
        /// Set when the caller asked to stop (callback) or cancelled: no more callbacks.
        var silenced = false
        /// A snapshot was not delivered because the run was silenced: the prefix a caller sees
        /// is then short of what was assembled, so the run cannot end as a success.
        var droppedSnapshot = false
        var stoppedByCallback = false
        var outcome: ListOutcome?
        /// The last snapshot delivered, without its delta's items: where the prefix a caller
        /// may see ends, its counts, and where the list goes on after it.
        var delivered: Snapshot?
        /// Of each snapshot queued for the consumer and not yet consumed (delivered to the
        /// callback, or taken from a pulled queue), in order: the pages in the prefix through it.
        var queuedPageTotals: [Int] = []
        /// Pages in the prefix through the last snapshot consumed.
        var consumedPages = 0
        /// Fetches held back while the consumer is behind: a window of pages waits for it.
        var heldFetches: [Fetch] = []
        /// The description with nothing left to detect, once known (at once when nothing is).
        var resolution: Detector.Resolution?
        /// The page with the highest index accepted so far: where the end of the list is checked.
        var lastPage: (index: Int, page: Page)?
        /// Of each accepted page not yet in the prefix: its URL, and the URL of the page after it.
        var pageEnds: [Int: (url: String?, next: String?, skip: Int)] = [:]
        /// Where the list goes on after the prefix assembled so far.
        var assembledResume: ResumePoint
        /// Ends the run when the caller's deadline passes.
        var deadline: Deadline?
        /// Answers for pages asked for ahead of page one that came before it: read and planned
        /// once page one has decided what the list is (and how to read it, when detected).
        var aheadOfPageOne: [(index: Int, serial: Int, end: FetchEnd)] = []

        /// Page one, held unplanned while the usual page parameters are tried on it, and the
        /// fetch of the one asked for now.
        var probing: (probe: PagingProbe, pageOne: ArrivedPage, fetch: (serial: Int, fetch: Fetch)?)?

        /// Pages in flight at most, once page one is in, for bodies of its size to stay within
        /// what one body may be (`ClientConfiguration.maxBodyBytes`, 64 MiB by default): a server
        /// that ignores the page parameter and sends its whole list each time costs a page at a
        /// time, not a window of them.
        var windowForPageBytes = Int.max

        /// Whether a window of pages waits for the consumer. Counted in pages, not snapshots: a
        /// snapshot holds every page that arrived ahead of a slow one (up to twice the window).
        func consumerIsBehind(window: Int) -> Bool {
            (queuedPageTotals.last ?? consumedPages) - consumedPages >= window
        }
    }

    private let client: SheafClient
    private let description: ListDescription
    /// What a resume token of this run is bound to (`ResumeToken.fingerprint`).
    private let fingerprint: UInt64
    /// Where this run starts (the first page number or offset of the list's first run, and the
    /// page size it was served, are the planner's).
    private let startPoint: ResumePoint
    /// For a partition that is not open-ended, the page (of this run, from 0) where its range
    /// ends: the page budget stopping there is the range's completion.
    private let partitionEnd: Int?
    /// The URL of the list's first page (a partition's: its range's first), before a `since`
    /// parameter, with no credential or secret query value: the list as messages and a sync
    /// state name it (`sheaf_list_url`).
    package let url: String
    private let state: Locked<State>
    private let delivery = DispatchQueue(label: "sheaf.list.snapshots")
    /// The caller's callback or channel feed, dropped at the end. Boxed in a class: a closure
    /// stored in a `Synchronization.Mutex` and read back through `withLock` was re-wrapped in one
    /// more reabstraction thunk on every read, so a long stream grew quadratically slow and
    /// finally overflowed the stack.
    private let onSnapshot: Locked<SnapshotCallbackBox?>
    private let requests: RequestCounters
    /// The window of the list's origin, shared with the client's other lists there.
    private let pace: OriginPace
    /// The most of it the list takes: a partition's share of its plan's window (`Int.max`: all).
    private let windowShare: Int
    /// The share of the origin's window a group gives the list now (`ListGroup`), besides
    /// `windowShare`; read without the group's lock (the group keeps it in a lock of its own).
    private let groupShare: (@Sendable (Int) -> Int)?
    /// Whether every page goes first at the origin (`init`'s `leads`).
    private let leads: Bool
    /// Whether a delivered snapshot stays pending until `snapshotTaken` (a channel's consumer).
    private let takesLater: Bool

    /// Requests sent so far, retries and redirects included.
    public var requestsMade: Int { requests.requestsMade }
    /// Requests waiting for an answer now.
    public var requestsInFlight: Int { requests.inFlight }
    /// Requests the list's origin may have in flight now, this list's and the client's other
    /// lists' there together (see `ClientConfiguration.adaptsWindow`).
    public var window: Int { pace.window }

    /// Whether the list ended at its bound (`ListDescription.until`): complete for what it was
    /// asked (every item newer than the bound), the item at the bound and those after it not
    /// delivered. (Not a `StopReason` of its own: a new case would break a Swift caller's
    /// exhaustive `switch`, and 1.0 froze the Swift API; C has `SHEAF_STOP_BOUND`.)
    public var reachedBound: Bool { state.withLock { $0.outcome == .complete && $0.assembler.reachedBound } }

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
        let originalDescription = description
        let onSnapshot: (@Sendable (Snapshot) -> Bool)?
        switch consumer {
        case .nobody: (onSnapshot, takesLater) = (nil, false)
        case .callback(let callback): (onSnapshot, takesLater) = (callback, false)
        case .channel(let feed): (onSnapshot, takesLater) = (feed, true)
        }
        var description = description
        let partition = description.partition
        if let partition {
            // The partition's URL, description and range replace the list's own; its origin must
            // be the client's, for the client's credential and secrets to go to it.
            guard Origin(partition.url) == client.origin else {
                throw SheafError(.invalidArgument, "the partition's URL is not on the client's origin \(client.origin); "
                                 + "a partition runs only where its client may send its credential (was it edited?)",
                                 url: client.redactor.redact(partition.url))
            }
            description = partition.description(runFor: description)
        }
        try description.check()
        var firstURL = try client.firstURL(of: description)
        url = client.redactor.redact(firstURL)
        if let since = description.since, let value = since.value, partition == nil {
            // The server sends only what is newer than what the last run got to.
            guard let url = URLText.settingQuery(firstURL, since.parameter, to: value.queryText) else {
                throw SheafError(.invalidArgument, "cannot set \(since.parameter) in \(client.redactor.redact(firstURL))")
            }
            firstURL = url
        }
        if partition != nil {
            // The secret query values the partition left out: the list's own and the base URL's.
            for source in [try? client.firstURL(of: originalDescription), client.baseURL].compactMap({ $0 }) {
                firstURL = client.redactor.restoringSecretParameters(of: source, in: firstURL, keeping: description.paging.parameter)
            }
        }
        fingerprint = ResumeToken.fingerprint(description, firstURL: firstURL, redactor: client.redactor)
        // A split list's pieces are the list's own URL with their bounds (a resumed run's too).
        let pieceTemplate = firstURL
        var start = ResumePoint(url: firstURL)
        var origin: Int?
        var resumedPageSize: Int?
        var pageBudget = description.maxPages
        if let token = description.resume {
            // The run goes on with what the first run read, from where it stopped.
            guard token.fingerprint == fingerprint else {
                throw SheafError(.invalidArgument, "the resume token was made by another list (another path, query or description)")
            }
            guard token.point.url != nil else {
                throw SheafError(.invalidArgument, "the resume token is of a list that had ended: there is nothing to resume")
            }
            // Only a page of the list's own origin and path gets the list's secrets back.
            let url = try token.startURL(forList: firstURL)
            firstURL = client.redactor.restoringSecretParameters(of: firstURL, in: url, keeping: token.paging.parameter)
            origin = token.paging.first
            resumedPageSize = token.pageSize
            let position = try token.position(in: firstURL)
            description.paging = token.paging.starting(at: position ?? origin ?? 0)
            description.signals = token.signals
            start = ResumePoint(url: firstURL, skip: token.point.skip, itemsBefore: token.point.itemsBefore)
        }
        var partitionEnd: Int?
        // For a partition, the pages its plan gave the run: no more are asked for ahead of page one,
        // and as many as the window the origin's answers have grown (these pages exist: the plan
        // counted them), not only the window a list starts with.
        var plannedPages: Int?
        if let partition, let parameter = description.paging.parameter,
           let range = try partition.range(resumedAt: description.resume == nil ? nil : description.paging.first ?? partition.paging.first) {
            // The run starts at the range's first page (or a resume token's page inside it) as a
            // resumed run does, and ends complete after the range's last page.
            if let position = range.firstPosition, let url = URLText.settingQuery(firstURL, parameter, to: String(position)) {
                origin = partition.paging.first
                resumedPageSize = partition.pageSize
                description.paging = description.paging.starting(at: position)
                firstURL = url
                start = ResumePoint(url: firstURL, itemsBefore: range.itemsBefore)
            }
            plannedPages = max(1, range.pages)
            if !partition.openEnded {
                partitionEnd = range.pages
                pageBudget = min(pageBudget ?? .max, range.pages)
            }
        }
        self.partitionEnd = partitionEnd
        let configuration = client.configuration
        let needsDetection = description.paging == .detect || Signal.allCases.contains { description.source(of: $0) == .detect }
        let resolution = needsDetection ? nil : Detector.Resolution(description: description, detected: [], pagingDetected: false)
        let pace = client.pace(for: firstURL)
        let windowShare = partition?.window ?? .max
        let window = min(pace.window, windowShare, groupShare?(pace.window) ?? .max)
        let planner = PagePlanner(firstURL: firstURL, paging: description.paging == .detect ? .next : description.paging,
                                  pagesSignalTheEnd: PageReader(description).pagesSignalTheEnd,
                                  window: window, maxPages: configuration.maxPages,
                                  pageBudget: pageBudget, pageGate: pageGate, origin: origin,
                                  resumedPageSize: resumedPageSize, pagesAhead: min(plannedPages ?? .max,
                                      Self.pagesAhead(description, window: plannedPages == nil ? min(window, configuration.window) : window,
                                                      asksAhead: client.asksAhead(of: firstURL))),
                                  rangeFilter: description.split.map { ($0, pieceTemplate, Self.pieceTarget(configuration, pageBudget: pageBudget)) })
        let assembler = Assembler(keepsItems: keepsItems, maxItems: description.maxItems,
                                  deduplicates: description.source(of: .identity) != .none, skipsOnFirstPage: start.skip,
                                  deltaPerPage: pageGate != nil, deltasCarryItems: onSnapshot != nil,
                                  bound: description.until?.value, recordsSync: description.syncField != nil)
        self.client = client
        self.description = description
        self.startPoint = start
        requests = RequestCounters(budget: description.maxRequests)
        self.pace = pace
        self.windowShare = windowShare
        self.groupShare = groupShare
        self.leads = leads
        var state = State(planner: planner, assembler: assembler, assembledResume: start)
        state.resolution = resolution
        self.state = Locked(state)
        self.onSnapshot = Locked(onSnapshot.map(SnapshotCallbackBox.init))
    }

    /// Starts fetching; returns at once. A run starts once.
    public func start() throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            guard !state.started else { throw SheafError(.state, "the list has already been started") }
            state.started = true
            if let milliseconds = description.deadlineMilliseconds {
                state.deadline = Deadline(after: milliseconds) { [weak self] in
                    self?.stop(SheafError(.deadline, "the list did not end within its deadline of \(milliseconds) ms"),
                               byCallback: false, silencing: false)
                }
            }
        }
        perform(page: nil) { $0.planner.start() }
    }

    /// Blocks until the run has finished and every snapshot callback has returned.
    /// - Throws: `.reentrant` when called from inside a Sheaf callback, `.state` before `start()`.
    public func wait() throws(SheafError) -> ListOutcome {
        guard !CallbackContext.isInsideCallback else {
            throw SheafError.blockingCallInsideCallback
        }
        guard state.withLock({ $0.started }) else { throw SheafError(.state, "the list has not been started") }
        return state.withLock(when: { $0.outcome != nil }, timeoutMilliseconds: nil) { state, _ in state.outcome! }
    }

    /// Runs `body` once the run has finished and every snapshot callback has returned (on a
    /// global queue); given before `start()`, once the run that starts then has finished.
    public func whenFinished(_ body: @escaping @Sendable () -> Void) {
        let finished = state.withLock { state in
            if state.outcome == nil { state.finishHandlers.append(body) }
            return state.outcome != nil
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
        perform(page: nil) { $0.planner.raiseGate(to: gate) }
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

    /// The last snapshot delivered (through the one being delivered, inside a callback), its
    /// delta without items: the counts of the prefix delivered so far.
    package var lastDelivered: Snapshot? { state.withLock { $0.delivered } }

    /// The ordered prefix delivered so far (through the snapshot being delivered, inside a
    /// callback), as one JSON array.
    public func prefixJSON() -> [UInt8] {
        Assembler.jsonArray(prefixPieces(through: nil))
    }

    /// The ordered prefix through `snapshot`, one of this run's, as one JSON array (for a caller
    /// that takes snapshots from a `SnapshotChannel`: what it has taken, not what was queued).
    package func prefixJSON(through snapshot: Snapshot) -> [UInt8] {
        Assembler.jsonArray(prefixPieces(through: snapshot))
    }

    /// The elements of the ordered prefix through `snapshot` (nil: the one delivered so far), in
    /// the pieces the run keeps, not copied: the C layer writes them straight into its buffer.
    package func prefixPieces(through snapshot: Snapshot?) -> [ArraySlice<UInt8>] {
        state.withLock { $0.assembler.prefixPieces(bytes: (snapshot ?? $0.delivered)?.delta.prefixBytes ?? 0) }
    }

    /// The token that resumes the list after the prefix delivered so far: nil when the list
    /// ended there, or completed.
    public func resumeToken() -> ResumeToken? {
        resumeToken(through: lastDelivered)
    }

    /// The token that resumes the list after `snapshot`, one of this run's (for a puller or a
    /// pager: the last one it took), or at the start when it is nil.
    package func resumeToken(through snapshot: Snapshot?) -> ResumeToken? {
        let point = snapshot?.resumePoint ?? startPoint
        let (resolution, outcome, end, origin, pageSize) = state.withLock {
            ($0.resolution, $0.outcome, $0.assembledResume, $0.planner.origin, $0.planner.resumedPageSize ?? $0.planner.servedPageSize)
        }
        // A completed list leaves nothing to resume after its last page; before it, it does
        // (snapshots a puller or a pager has not taken yet).
        guard var url = point.url, outcome != .complete || point != end else { return nil }
        let read = resolution?.description ?? description
        let paging = read.paging.starting(at: origin ?? read.paging.first ?? 0)
        url = client.redactor.removingSecretParameters(of: url, keeping: paging.parameter)
        var resumed = point
        resumed.url = url
        // Once the first page is read, what was not detected is absent: never detected again.
        return ResumeToken(fingerprint: fingerprint, paging: paging, signals: read.signals, resolved: resolution != nil,
                           pageSize: pageSize, point: resumed)
    }

    /// Pages asked for before page one answers (when they can be addressed): a window (the one a
    /// list starts with, not what the origin's has grown to: these pages may not exist; a
    /// partition's, whose pages its plan counted, may take the grown one), within
    /// the request budget, and no more than the item limit needs at the size asked for (none
    /// ahead when that size is unknown). Without a credential, on an origin that has not yet
    /// answered a page one on this client (`SheafClient.asksAhead(of:)`), page one and page two
    /// only: a missing token costs two refused requests, not a window of them (which an API's
    /// abuse detection may count).
    static func pagesAhead(_ description: ListDescription, window: Int, asksAhead: Bool) -> Int {
        // A list that syncs opens its window as it goes (`windowForSync`): page one alone first.
        if description.syncField != nil { return 1 }
        let ahead = min(window, description.maxRequests ?? .max, asksAhead ? .max : pagesAheadOfAnUntriedOrigin)
        guard let maxItems = description.maxItems else { return ahead }
        guard let size = description.paging.size?.value, size > 0 else { return 1 }
        return min(ahead, maxItems / size + (maxItems % size == 0 ? 0 : 1))
    }

    /// The pieces a split list is cut into: four per request the window may have in flight
    /// (a piece that proves long leaves the others to fill the window), and no more than a page
    /// budget can reach after page one (a budget of 4 pages delivers 3 pieces' worth, not 3 of 256;
    /// a budget of page one alone, a plan of partitions, plans them all).
    static func pieceTarget(_ configuration: ClientConfiguration, pageBudget: Int?) -> Int {
        min(4 * max(configuration.window, configuration.maxWindow), pageBudget.map { $0 > 1 ? $0 - 1 : .max } ?? .max)
    }

    // MARK: Events

    /// A page's fetch ended: its answer is read and planned, or its failure or budget stop planned.
    private func fetchEnded(_ index: Int, serial: Int, _ end: FetchEnd) {
        offTheTransportThread(for: end) { [self] in startingWhatIsPlanned { fetchEnded(index, serial: serial, end, starting: &$0) } }
    }

    /// Runs `body` for a fetch that ended: on the global pool when it brought an answer (reading
    /// a page is CPU work, not the transport's), at once otherwise.
    private func offTheTransportThread(for end: FetchEnd, _ body: @escaping @Sendable () -> Void) {
        if case .fetched = end {
            DispatchQueue.global().async(execute: body)
        } else {
            body()
        }
    }

    /// Runs `plan`, then starts the fetches it planned (outside the run's lock).
    private func startingWhatIsPlanned(_ plan: (inout [Fetch]) -> Void) {
        var starts: [Fetch] = []
        plan(&starts)
        starts.forEach { $0.start() }
    }

    /// Plans how page `index`'s fetch ended; the fetches it plans go into `starts`, for the
    /// caller to start once every answer that came ahead of page one has been planned too (a
    /// budget that a new request would exceed must not end the list before pages that already
    /// arrived are in).
    private func fetchEnded(_ index: Int, serial: Int, _ end: FetchEnd, starting starts: inout [Fetch]) {
        if case .failed(let error) = end, error.code == .bodyTooLarge, askedAgain(index, serial: serial, starting: &starts) { return }
        if heldForPageOne(index, serial, end) { return }
        switch end {
        case .fetched(let fetched):
            if index == 0, (200..<300).contains(fetched.response.status) { client.noteAccepted(startPoint.url ?? fetched.url) }
            pageArrived(index, serial: serial, url: fetched.url, response: fetched.response, starting: &starts)
        case .failed(let error):
            perform(page: (index, serial, .empty), starting: &starts) { $0.planner.pageFailed(index, error) }
        case .outOfBudget:
            perform(page: (index, serial, .empty), starting: &starts) { $0.planner.pageStopped(index, .requestBudget) }
        }
        if index == 0 { replayAheadOfPageOne(starting: &starts) }
    }

    /// A page as it arrived and was read, before it is planned.
    private struct ArrivedPage: Sendable {
        let index: Int
        let serial: Int
        let url: String
        let response: HTTPResponse
        let page: Page
        /// What detection decided, for the first page of a list that detects.
        var detection: Detector.Resolution?
    }

    /// Reads and plans one page.
    private func pageArrived(_ index: Int, serial: Int, url: String, response: HTTPResponse, starting starts: inout [Fetch]) {
        let page: Page
        var detection: Detector.Resolution?
        do {
            var resolution = state.withLock { $0.resolution }
            if resolution == nil {
                // The first page: whatever the description left open is decided here, once.
                resolution = try Detector.resolve(description, response, url: url)
                detection = resolution
            }
            page = try PageReader(resolution!.description).read(response, from: url)
        } catch {
            return perform(page: (index, serial, .empty), starting: &starts) { $0.planner.pageFailed(index, error) }
        }
        let arrived = ArrivedPage(index: index, serial: serial, url: url, response: response, page: page, detection: detection)
        if detection?.needsProbe == true {
            return startProbe(arrived, starting: &starts)
        }
        plan(arrived, starting: &starts)
    }

    /// Plans a page that arrived (the first one with what detection decided).
    private func plan(_ arrived: ArrivedPage, starting starts: inout [Fetch]) {
        let index = arrived.index
        perform(page: (index, arrived.serial, arrived.page), starting: &starts) { state in
            if let detection = arrived.detection, state.resolution == nil {
                state.resolution = detection
                state.planner.adopt(detection.description.paging,
                                    pagesSignalTheEnd: PageReader(detection.description).pagesSignalTheEnd)
            }
            if index == 0 {
                state.windowForPageBytes = max(1, client.configuration.maxBodyBytes / max(1, arrived.response.body.count))
                state.planner.window = min(state.planner.window, state.windowForPageBytes)
            }
            let actions = state.planner.pageArrived(index, arrived.page)
            // Logged before the pages it plans are sent, so the log reads in order.
            if index == 0, let hooks = client.hooks { logPlan(hooks, state, url: arrived.url) }
            return actions
        }
    }

    // MARK: Probing page one's paging

    /// Page one promises more items and shows no way to them: before it is planned, the usual
    /// page parameters are tried on its URL, one request at a time (`PagingProbe` decides, this
    /// run fetches). The probes are pages of the list like any other: the same fetch, budget and
    /// origin rules.
    private func startProbe(_ pageOne: ArrivedPage, starting starts: inout [Fetch]) {
        var probe = PagingProbe(firstURL: startPoint.url ?? pageOne.url, pageOne: pageOne.page)
        let step = probe.start()
        let current = state.withLock { state -> Bool in
            guard state.ending == nil, state.fetches[0]?.serial == pageOne.serial else { return false }
            state.probing = (probe, pageOne, nil)
            return true
        }
        if current { follow(step, pageOne, starting: &starts) }
    }

    /// The probe's fetch `serial` ended: its answer decides the next step.
    private func probeEnded(_ pageOne: ArrivedPage, serial: Int, _ end: FetchEnd) {
        var answer: Page?
        switch end {
        case .fetched(let fetched):
            answer = try? PageReader(pageOne.detection!.description).read(fetched.response, from: fetched.url)
        case .failed:
            break
        case .outOfBudget:
            // The budget ends the list before page one is planned: without its paging, nothing
            // after it could be resumed.
            return perform(page: (0, pageOne.serial, .empty)) { $0.planner.pageStopped(0, .requestBudget) }
        }
        startingWhatIsPlanned { starts in
            let step = state.withLock { state -> PagingProbe.Step? in
                guard state.ending == nil, state.probing?.fetch?.serial == serial else { return nil }
                state.probing!.fetch = nil
                return state.probing!.probe.answered(answer)
            }
            if let step { follow(step, pageOne, starting: &starts) }
        }
    }

    /// Carries out one step of the probe.
    private func follow(_ step: PagingProbe.Step, _ pageOne: ArrivedPage, starting starts: inout [Fetch]) {
        switch step {
        case .fetch(let url):
            let fetch = state.withLock { state -> Fetch? in
                guard state.ending == nil, state.probing != nil else { return nil }
                state.fetchSerial += 1
                let serial = state.fetchSerial
                let fetch = Fetch(client: client, url: url, requests: requests, pace: pace) { [self] end in
                    offTheTransportThread(for: end) { [self] in probeEnded(pageOne, serial: serial, end) }
                }
                state.probing!.fetch = (serial, fetch)
                return fetch
            }
            if let fetch { starts.append(fetch) }
        case .adopt(let paging):
            state.withLock { $0.probing = nil }
            var found = pageOne
            found.detection!.description.paging = paging
            found.detection!.pagingDetected = true
            plan(found, starting: &starts)
        case .refuse(let error):
            state.withLock { $0.probing = nil }
            perform(page: (0, pageOne.serial, .empty), starting: &starts) { $0.planner.pageFailed(0, error) }
        }
    }

    /// Pages (page one included) asked for before page one answers, without a credential, on an
    /// origin that has not answered one yet.
    static let pagesAheadOfAnUntriedOrigin = 2

    /// The most the pages asked for ahead of page one may bring between them (32 MiB): each of
    /// `pagesAhead` may bring its share, and never less than an eighth (4 MiB for the eight a
    /// list starts with; 1 MiB each for the 32 of a partition sent on a window grown to 32).
    static func aheadBodyCap(pagesAhead: Int) -> Int { (32 << 20) / max(8, pagesAhead) }

    /// A page asked for ahead of page one came back bigger than such a page may be: it is asked
    /// for again without that cap, at once when page one's plan already needs it, otherwise when
    /// that plan does. Returns whether the fetch was such a page.
    private func askedAgain(_ index: Int, serial: Int, starting starts: inout [Fetch]) -> Bool {
        let ahead = state.withLock { state in state.fetches[index].flatMap { $0.serial == serial ? $0.aheadURL : nil } }
        guard let url = ahead else { return false }
        perform(page: (index, serial, .empty), starting: &starts) { state in
            guard state.planner.mode == .firstPage, !state.planner.isFinished else { return [.fetch(index: index, url: url)] }
            state.planner.forgetAhead(index)
            return []
        }
        return true
    }

    /// Keeps how the fetch of a page after the first ended while page one has not been planned.
    private func heldForPageOne(_ index: Int, _ serial: Int, _ end: FetchEnd) -> Bool {
        guard index > 0 else { return false }
        return state.withLock { state in
            guard state.ending == nil, state.planner.mode == .firstPage, !state.planner.isFinished else { return false }
            state.aheadOfPageOne.append((index, serial, end))
            return true
        }
    }

    /// Hands in how the fetches ahead of page one ended, now that it has been planned (those for
    /// pages the plan abandoned are ignored as any abandoned answer is).
    private func replayAheadOfPageOne(starting starts: inout [Fetch]) {
        let held = state.withLock { state in
            defer { state.aheadOfPageOne = [] }
            return state.ending == nil ? state.aheadOfPageOne : []
        }
        for (index, serial, end) in held {
            fetchEnded(index, serial: serial, end, starting: &starts)
        }
    }

    /// One record of how the list is fetched, once page one has decided it.
    private func logPlan(_ hooks: Hooks, _ state: State, url: String) {
        hooks.log(.info) {
            let configuration = client.configuration
            let windowText = configuration.adaptsWindow && configuration.window < configuration.maxWindow
                ? "a window of \(state.planner.window) adapting up to \(configuration.maxWindow)" : "\(state.planner.window)"
            let json = String(decoding: describe(state), as: UTF8.self)
            let why = switch state.planner.mode {
            case .parallel(let pages): "the \(pages) pages are addressed and their count is known: \(windowText) in flight"
            case .speculative: "the pages are addressed, their count unknown: \(windowText) in flight ahead of the end"
            case .sequential, .firstPage: "each page names the next (a link or a cursor): one at a time"
                + (state.planner.unsplitReason.map { " (not split: \($0))" } ?? "")
            case .pieces: "a cursor list with a range filter: \(state.planner.split?.summary ?? ""), each walked by its cursor, "
                + "\(windowText) in flight"
            }
            let url = client.redactor.redact(url)
            return LogRecord(level: .info, kind: .plan, message: "\(url): \(why); the list as read: \(client.redactor.redact(json))",
                             url: url)
        }
    }

    /// What page one decided, for a plan of partitions: the description read, the walk chosen,
    /// the page size served and the server's total.
    func planFacts() -> (description: ListDescription, mode: PagePlanner.Mode, servedPageSize: Int, expectedTotal: Int?,
                         split: RangeSplitter?) {
        state.withLock { state in
            (state.resolution?.description ?? description, state.planner.mode, state.planner.servedPageSize,
             state.planner.expectedTotal, state.planner.split)
        }
    }

    /// The description as the run uses it (detected parts resolved once the first page is in),
    /// with the plan chosen, as a JSON object; for a list that syncs, with the state it got to
    /// through the snapshots delivered ("sync_state").
    public func descriptionJSON() -> [UInt8] {
        state.withLock { describe($0, syncThrough: $0.delivered) }
    }

    /// As `descriptionJSON()`, with the sync state through `snapshot`, one of this run's (for a
    /// puller: the last one it took; nil: none).
    package func descriptionJSON(syncThrough snapshot: Snapshot?) -> [UInt8] {
        state.withLock { describe($0, syncThrough: snapshot) }
    }

    /// What a list that syncs got to through the snapshots delivered: the state to store for
    /// the next run (nil when the description has neither a bound nor a since filter).
    public var syncState: SyncState? { syncState(through: lastDelivered) }

    /// What a list that syncs got to through `snapshot`, one of this run's (nil: none).
    package func syncState(through snapshot: Snapshot?) -> SyncState? {
        description.syncState(greatest: snapshot?.delta.greatestSyncValue)
    }

    private func describe(_ state: State, syncThrough snapshot: Snapshot? = nil) -> [UInt8] {
        let resolution = state.resolution
        let plan: String?
        switch state.planner.mode {
        case .firstPage: plan = state.ending != nil && resolution != nil ? "sequential" : nil
        case .parallel: plan = "parallel"
        case .speculative: plan = "speculative"
        case .sequential: plan = resolution?.description.paging == .single ? "single" : "sequential"
        case .pieces: plan = "split"
        }
        let splitPlan = description.split == nil ? nil
            : state.planner.split?.summary ?? state.planner.unsplitReason.map { "walked as one piece: \($0)" }
        let sync = description.syncState(greatest: snapshot?.delta.greatestSyncValue).map { (list: url, state: $0) }
        return (resolution?.description ?? description).json(resolution: resolution, plan: plan, sync: sync, splitPlan: splitPlan)
    }

    /// Asks the planner (through `decide`) and carries out its actions: planning, assembly and
    /// endings under one hold of the lock — so no other page's ending can slip in between a
    /// decision and its effect — and I/O outside it.
    private func perform(page: (index: Int, serial: Int, page: Page)?, _ decide: (inout State) -> [PagePlanner.Action]) {
        startingWhatIsPlanned { perform(page: page, starting: &$0, decide) }
    }

    /// As `perform(page:_:)`, leaving the fetches to start in `toStart`.
    private func perform(page: (index: Int, serial: Int, page: Page)?, starting toStart: inout [Fetch],
                         _ decide: (inout State) -> [PagePlanner.Action]) {
        var toCancel: [any TransportTask] = []
        state.withLock { state in
            guard state.ending == nil else { return }
            if let page {
                guard state.fetches[page.index]?.serial == page.serial else { return } // abandoned
                state.fetches[page.index] = nil
            }
            // A group's share bounds what the list would guess (page one, speculative pages); the
            // pages its plan knows to exist take what the origin's window has.
            let origin = pace.window
            let share = state.planner.asksOnlyForKnownPages ? nil : groupShare?(origin)
            state.planner.window = min(origin, windowShare, share ?? .max, state.windowForPageBytes, windowForSync(state))
            var actions = decide(&state)[...]
            while let action = actions.popFirst() {
                switch action {
                case .fetch(let index, let url):
                    guard state.ending == nil else { continue }
                    // The page takes its request of the budget now, in the plan's order: a page
                    // planned later must not spend the request of one planned before it.
                    guard requests.reserve() else {
                        actions += state.planner.pageStopped(index, .requestBudget)
                        continue
                    }
                    state.fetchSerial += 1
                    let serial = state.fetchSerial
                    // A page asked for before page one has shown what the list is may be of a
                    // server that ignores the page parameter and sends its whole list each time:
                    // a window of those must not all be held at once.
                    let capped = index > 0 && state.planner.mode == .firstPage
                    var template = FetchTemplate()
                    if capped { template.maxBodyBytes = Self.aheadBodyCap(pagesAhead: state.planner.pagesAhead) }
                    // The one page a list asks for with none other in flight (page one, the next
                    // of a walk) goes first at its origin, ahead of the pages of batches: a walk
                    // never waits behind pages another list could have asked for at any time.
                    let leads = self.leads || state.fetches.isEmpty
                    let fetch = Fetch(client: client, url: url, template: template, requests: requests, pace: pace,
                                      reserved: true, leads: leads) { [self] end in
                        fetchEnded(index, serial: serial, end)
                    }
                    state.fetches[index] = (serial, fetch, capped ? url : nil)
                    // A slow consumer slows the fetching, rather than letting pages pile up.
                    if state.consumerIsBehind(window: client.configuration.window) {
                        state.heldFetches.append(fetch)
                    } else {
                        toStart.append(fetch)
                    }
                case .accept(let index), .acceptEmpty(let index):
                    let content: Page
                    if case .acceptEmpty = action {
                        content = .empty
                    } else if let page, page.index == index {
                        content = page.page
                    } else {
                        continue
                    }
                    guard state.ending == nil else { continue }
                    if index >= (state.lastPage?.index ?? 0) { state.lastPage = (index, content) }
                    if action == .acceptEmpty(index: index) {
                        state.pageEnds[index] = (content.url, nil, 0)
                    } else if state.planner.mode == .pieces {
                        let (next, skip) = state.planner.pieceContinuation(after: index, content, kept: content.items.indices)
                        state.pageEnds[index] = (content.url, next, skip)
                    } else {
                        state.pageEnds[index] = (content.url, state.planner.continuation(after: index, content), 0)
                    }
                    accept(index, content, &state, &toCancel)
                case .acceptPart(let index, let items, let endsPiece):
                    guard state.ending == nil, let page, page.index == index else { continue }
                    let content = page.page.part(items, endsList: endsPiece)
                    if index >= (state.lastPage?.index ?? 0) { state.lastPage = (index, content) }
                    let (next, skip) = state.planner.pieceContinuation(after: index, page.page, kept: items)
                    state.pageEnds[index] = (page.page.url, next, skip)
                    accept(index, content, &state, &toCancel)
                case .jump(let index, let next):
                    state.assembler.jump(after: index, to: next)
                case .cancel(let indices):
                    toCancel += indices.compactMap { state.fetches.removeValue(forKey: $0)?.fetch.abandon() }
                case .discard(let index):
                    state.assembler.discard(after: index)
                    state.pageEnds = state.pageEnds.filter { $0.key <= index }
                    if let last = state.lastPage, last.index > index { state.lastPage = nil }
                case .finish(let ending):
                    toCancel += end(&state, outcome(of: ending, state))
                }
            }
        }
        toCancel.forEach { $0.cancel() }
    }

    /// Hands page `index` (as the plan accepted it) to the assembler, queues the snapshots it
    /// makes, and ends the run where the page reached a limit, a bound or a repeat.
    private func accept(_ index: Int, _ content: Page, _ state: inout State, _ toCancel: inout [any TransportTask]) {
        let deltas = state.assembler.add(index, content)
        for (delta, lastPage) in zip(deltas, state.assembler.deltaLastPages) {
            state.assembledResume = resumePoint(after: delta, lastPage: lastPage, &state)
            let snapshot = Snapshot(delta: delta, expectedItems: state.planner.expectedTotal,
                                    expectedPages: state.planner.expectedPages, resumePoint: state.assembledResume)
            state.queuedPageTotals.append(delta.pages)
            delivery.async { [self] in deliver(snapshot) }
        }
        if state.assembler.reachedLimit {
            toCancel += end(&state, .finished(.itemLimit))
        }
        if state.assembler.reachedBound {
            // Pages in flight past the bound are abandoned, and none is asked for.
            toCancel += end(&state, .complete)
        }
        if let repeated = state.assembler.repeatedPage {
            toCancel += end(&state, .failed(SheafError(.repeatedPage,
                "page \(repeated + 1) repeats the items of page \(repeated) byte for byte: the server ignores the paging "
                + "parameter, or the list is described with the wrong one", url: state.lastPage?.page.url,
                hint: "check the paging parameter (--paging), or --paging single")))
        }
    }

    /// For a list that syncs (a bound or a since filter), a page in flight per page delivered (at
    /// least one): a sync run mostly fetches a page or two of what is new, and a full window sent
    /// at once would mostly ask for pages past its bound, or past the end of a filtered list whose
    /// length is unknown. A run that keeps finding new items opens up as it goes.
    private func windowForSync(_ state: State) -> Int {
        description.syncField == nil ? .max : max(1, state.assembler.pageCount)
    }

    /// Where the list goes on after the prefix that now ends with `delta` (page `lastPage`): after
    /// its last page, or inside it where the item limit cut it.
    private func resumePoint(after delta: SnapshotDelta, lastPage last: Int, _ state: inout State) -> ResumePoint {
        let ends = state.pageEnds[last]
        state.pageEnds = state.pageEnds.filter { $0.key > last }
        var point = ResumePoint(url: ends?.next, skip: ends?.skip ?? 0, itemsBefore: state.assembledResume.itemsBefore + delta.items)
        if let cut = state.assembler.cut, cut.index == last, let url = ends?.url {
            point.url = url
            point.skip = cut.consumed
        }
        return point
    }

    /// The run's outcome from how the planner ended it.
    private func outcome(of ending: PagePlanner.Ending, _ state: State) -> ListOutcome {
        let assembler = state.assembler
        let itemCount = state.assembledResume.itemsBefore // every run's items, for the totals
        switch ending {
        case .stopped(let index, let reason):
            if reason == .pageBudget, index == partitionEnd { return .complete }
            return .finished(reason)
        case .failed(_, let error):
            return .failed(error)
        case .allPages(let total, let missing):
            if assembler.reachedLimit { return .finished(.itemLimit) }
            if assembler.reachedBound { return .complete }
            guard let total, total != itemCount || !missing.isEmpty else {
                // Never silently short: the last page must not signal more than was followed.
                if let resolved = state.resolution?.description, resolved.paging != .single, let last = state.lastPage,
                   let error = Detector.unfollowed(last.page, resolved, itemCount: itemCount) {
                    return .failed(error)
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

    /// Ends the run with `error`; `silencing`, no snapshot is delivered any more (a deadline
    /// still delivers what was assembled before it).
    private func stop(_ error: SheafError, byCallback: Bool, silencing: Bool = true) {
        let toCancel = state.withLock { state -> [any TransportTask] in
            if silencing { state.silenced = true }
            if byCallback { state.stoppedByCallback = true }
            guard state.started, state.ending == nil else { return [] }
            return end(&state, .failed(error))
        }
        toCancel.forEach { $0.cancel() }
    }

    /// Abandons every fetch of the run, under the run's lock, so that its requests are counted
    /// out before its end can be seen; returns their attempts at the transport, to cancel once
    /// the lock is released (a transport may call back as it cancels).
    private func cancelAll(_ state: inout State) -> [any TransportTask] {
        _ = state.planner.stop()
        state.heldFetches.removeAll()
        let probe = state.probing?.fetch?.fetch.abandon()
        state.probing = nil
        defer { state.fetches.removeAll() }
        return state.fetches.values.compactMap { $0.fetch.abandon() } + (probe.map { [$0] } ?? [])
    }

    /// Decides the outcome (once) and queues the final step behind every queued snapshot.
    /// Returns the attempts of the fetches it let go of, to cancel once the lock is released.
    private func end(_ state: inout State, _ outcome: ListOutcome) -> [any TransportTask] {
        guard state.ending == nil else { return [] }
        state.deadline?.cancel()
        state.deadline = nil
        // Whatever fetch the run still holds no longer matters: a fetch's completion holds the
        // run, so one left behind (an answer that came ahead of page one and was never planned)
        // would keep the run, its pages and its channel alive for ever.
        let leftover = cancelAll(&state)
        state.aheadOfPageOne = []
        // The one place every failure passes: a server, a next link or a redirect may have
        // carried a credential into it.
        if case .failed(let error) = outcome {
            state.ending = .failed(client.redacting(error))
        } else {
            state.ending = outcome
        }
        delivery.async { [self] in
            let outcome = finalOutcome()
            onSnapshot.withLock { $0 = nil } // drop the caller's context: no callback after the end
            let handlers = self.state.withLock { state in
                state.outcome = outcome
                defer { state.finishHandlers = [] }
                return state.finishHandlers
            }
            self.state.changed()
            handlers.forEach { DispatchQueue.global().async(execute: $0) }
        }
        return leftover
    }

    /// The outcome, once the last snapshot was delivered: the ending, or the stop a callback
    /// asked for, as the finishing step (dropped here, with what it holds) makes it.
    private func finalOutcome() -> ListOutcome {
        let (ending, finishing) = state.withLock { state in
            defer { state.finishing = nil }
            var ending = state.ending!
            if state.stoppedByCallback {
                ending = .failed(SheafError(.stopped, "the snapshot callback asked to stop"))
            } else if state.droppedSnapshot, ending.error == nil {
                // A cancel that came after the end was decided but before the consumer had every
                // snapshot: an OK list is always whole, so this one ends cancelled.
                ending = .failed(SheafError(.cancelled, "the list was cancelled"))
            }
            return (ending, state.finishing)
        }
        // A caller's code may run in it (a write function): a blocking call there is refused.
        return finishing.map { body in CallbackContext.run(for: self) { body(ending) } } ?? ending
    }

    /// The caller of a pulled run stops taking snapshots: the run stops as when a callback asks to.
    /// Ends the run with `error` (a group's fan-out that finds an item it cannot use): in-flight
    /// requests are abandoned and no snapshot is delivered any more.
    package func fail(_ error: SheafError) {
        stop(error, byCallback: false)
    }

    package func stopTaking() {
        stop(SheafError(.stopped, "the snapshot callback asked to stop"), byCallback: true)
    }

    /// A pulled snapshot was taken by the caller: it no longer counts against the window. The
    /// fetches it releases start on a library thread, not on the caller's (a language runtime's
    /// thread that takes snapshots should spend nothing on them).
    package func snapshotTaken() {
        releaseSnapshot(startingOn: .global()) { _ in }
    }

    /// Counts one snapshot as consumed (after `change`, under the lock) and starts the fetches
    /// held back while the consumer was behind (here, or on `queue`); returns whether the run is
    /// silenced.
    @discardableResult
    private func releaseSnapshot(startingOn queue: DispatchQueue? = nil, _ change: (inout State) -> Void) -> Bool {
        let (silenced, released) = state.withLock { state -> (Bool, [Fetch]) in
            change(&state)
            if !state.queuedPageTotals.isEmpty { state.consumedPages = state.queuedPageTotals.removeFirst() }
            var released: [Fetch] = []
            if !state.consumerIsBehind(window: client.configuration.window), state.ending == nil {
                swap(&released, &state.heldFetches)
            }
            return (state.silenced, released)
        }
        if let queue, !released.isEmpty {
            queue.async { released.forEach { $0.start() } }
        } else {
            released.forEach { $0.start() }
        }
        return silenced
    }

    private func deliver(_ snapshot: Snapshot) {
        let record = { (state: inout State) in
            if state.silenced { state.droppedSnapshot = true } else { state.delivered = snapshot.counts }
        }
        let silenced: Bool
        if takesLater {
            silenced = state.withLock { state in
                record(&state)
                return state.silenced
            }
        } else {
            silenced = releaseSnapshot(record)
        }
        guard !silenced, let callback = onSnapshot.withLock({ $0 })?.callback else { return }
        let goOn = CallbackContext.run(for: self) { callback(snapshot) }
        if !goOn { stop(SheafError(.stopped, "the snapshot callback asked to stop"), byCallback: true) }
    }
}

/// Holds a snapshot callback by reference (see `ListRun.onSnapshot`).
private final class SnapshotCallbackBox: Sendable {
    let callback: @Sendable (Snapshot) -> Bool

    init(_ callback: @escaping @Sendable (Snapshot) -> Bool) {
        self.callback = callback
    }
}
