import CSheafHeader
import Sheaf
#if canImport(Glibc)
import Glibc
#endif

/// The `sheaf_list` behind the opaque pointer: a description being built, then one run of it.
final class ListHandle: Sendable, ErrorRecording {
    private struct State {
        var started: Bool { run != nil || pager != nil }
        var description: ListDescription
        var keepsItems = true
        /// Written to when a pulled snapshot or the end is ready (sheaf_list_set_notify_fd); -1: none.
        var notifyFD: Int32 = -1
        /// The list's own transport, in place of the client's.
        var transport: CFunctionTransport?
        /// Headers of every page request, replacing the client's of the same name.
        var headers: [HTTPHeader] = []
        var run: ListRun?
        /// Set when the list was started in load-more mode (sheaf_list_start_load_more).
        var pager: ListPager?
        /// Set when the list was started for pulling (sheaf_list_start_pull).
        var pull: SnapshotChannel<PulledSnapshot>?
        /// The last snapshot sheaf_list_next handed out: its C memory stays alive (at least
        /// until the next call, as the header promises), and the prefix a puller saw ends there.
        var lastTaken: PulledSnapshot?
        /// The outcome's error, or the last failed call's (sheaf_list_error).
        var lastError: SheafError?
        /// Whether a group runs the list: nobody waits on it, so its outcome's error is read
        /// from the run.
        var inGroup = false

        /// The run: the list's one run, or a load-more list's current one.
        var current: ListRun? { pager?.run ?? run }

        /// The last snapshot the caller has seen: handed out by sheaf_list_more, taken with
        /// sheaf_list_next, or delivered to the callback. The prefix, the resume token and the
        /// counts a caller is told end there.
        var seen: Snapshot? {
            if let pager { return pager.lastPage }
            return pull != nil ? lastTaken?.snapshot : run?.lastDelivered
        }
    }

    let client: ClientHandle
    /// The notify fd (sheaf_list_set_notify_fd) while the library may write to it: -1 once the list
    /// is freed, under the lock each write holds.
    let notifyTarget = Locked<Int32>(-1)
    private let state: Locked<State>
    /// The delta the snapshot callback is being given (sheaf_list_delta_has_long_digits).
    let beingDelivered = DeltaBeingDelivered()

    init(client: ClientHandle, path: String) {
        self.client = client
        state = Locked(State(description: ListDescription(path: path)))
    }

    /// Changes what the list will run with; refused once it has started.
    private func configure(_ change: (inout State) throws(SheafError) -> Void) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            guard !state.started else { throw SheafError(.state, "the list has already been started") }
            try change(&state)
        }
    }

    func describe(_ change: (inout ListDescription) throws(SheafError) -> Void) throws(SheafError) {
        try configure { (state) throws(SheafError) in try change(&state.description) }
    }

    func setKeepsItems(_ keeps: Bool) throws(SheafError) {
        try configure { $0.keepsItems = keeps }
    }

    func setNotifyFD(_ fd: Int32) throws(SheafError) {
        guard fd >= -1 else { throw SheafError(.invalidArgument, "the notify fd must be a file descriptor or -1, not \(fd)") }
        try configure { $0.notifyFD = fd }
    }

    func setTransport(_ transport: CFunctionTransport?) throws(SheafError) {
        try configure { $0.transport = transport }
    }

    func addHeader(_ header: HTTPHeader) throws(SheafError) {
        let header = try HeaderRules.check(header)
        try configure { $0.headers.replace(with: header) }
    }

    /// Starts the run with `onSnapshot` (nil: no callback), or, `pulling`, with its snapshots
    /// queued for sheaf_list_next (the run holds back while a window of them wait).
    /// - Parameters:
    ///   - keepingItems: in place of sheaf_list_set_keep_items (fetch-all keeps them, an output
    ///     does not).
    ///   - finishing: see `ListRun.finishing`.
    func start(keepingItems: Bool? = nil, onSnapshot: (@Sendable (Snapshot) -> Bool)?, pulling: Bool = false,
               finishing: (@Sendable (ListOutcome) -> ListOutcome)? = nil) throws(SheafError) -> ListRun {
        let run = try state.withLock { (state) throws(SheafError) -> ListRun in
            let client = try clientForTheRun(state)
            if let keepingItems { state.keepsItems = keepingItems }
            let keepsItems = state.keepsItems
            let pull = pulling ? SnapshotChannel<PulledSnapshot>() : nil
            let target = notifyTarget
            target.withLock { $0 = state.notifyFD }
            // The C copy of a pulled snapshot is made on the run's delivery thread, not on the
            // caller's thread that takes it.
            let run: ListRun
            if let pull {
                if state.notifyFD >= 0 { pull.whenReady { target.wake() } }
                run = try client.makeList(state.description, keepsItems: keepsItems, into: pull) { (PulledSnapshot($0), true) }
            } else if state.notifyFD >= 0 {
                // A waiter (an event loop, Python's fetch_to) wakes after each snapshot delivered
                // and at the end, instead of polling the status.
                run = try client.makeList(state.description, keepsItems: keepsItems) { snapshot in
                    defer { target.wake() }
                    return onSnapshot?(snapshot) ?? true
                }
                run.whenFinished { target.wake() }
            } else {
                run = try client.makeList(state.description, keepsItems: keepsItems, onSnapshot: onSnapshot)
            }
            state.run = run
            state.pull = pull
            return run
        }
        if let finishing { run.finishing(finishing) }
        try run.start()
        return run
    }

    /// Joins a group (sheaf_group_add, _add_each): `join` makes the list's run in the group from
    /// its client, description and whether it keeps items; the list then reads that run as its
    /// own (status, error, resume token, prefix), and cannot be started itself.
    func joinGroup(_ join: (SheafClient, ListDescription, Bool) throws(SheafError) -> ListRun) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            state.run = try join(try clientForTheRun(state), state.description, state.keepsItems)
            state.inGroup = true
        }
    }

    /// The description and client of a list that never runs itself (a fan-out's child prototype).
    func prototype() throws(SheafError) -> (client: SheafClient, description: ListDescription, keepsItems: Bool) {
        try state.withLock { (state) throws(SheafError) in (try clientForTheRun(state), state.description, state.keepsItems) }
    }

    /// A list of a group that the group made (a fan-out's child), reading `run` as its own.
    init(client: ClientHandle, adopting run: ListRun, description: ListDescription, keepsItems: Bool) {
        self.client = client
        var state = State(description: description)
        state.keepsItems = keepsItems
        state.run = run
        state.inGroup = true
        self.state = Locked(state)
    }

    /// Splits the list into up to `count` partitions from its page one (sheaf_list_partitions):
    /// a run of its own, on the client the list would run with; the list itself stays unstarted.
    func partitions(count: Int, atOnce: Int) throws(SheafError) -> [Partition] {
        let (client, description) = try state.withLock { (state) throws(SheafError) -> (SheafClient, ListDescription) in
            (try clientForTheRun(state), state.description)
        }
        return try client.partitions(of: description, count: count, atOnce: atOnce)
    }

    /// Sets the list to run exactly `partition` (sheaf_list_set_partition).
    func setPartition(_ partition: Partition) throws(SheafError) {
        try describe { description in
            description.partition = partition
            let read = partition.description(path: description.path)
            description.paging = read.paging
            description.signals = read.signals
            description.preset = read.preset
        }
    }

    /// Starts the list in load-more mode: nothing is fetched until the pager is asked.
    func startLoadMore(lookAhead: Int) throws(SheafError) {
        try state.withLock { (state) throws(SheafError) in
            let client = try clientForTheRun(state)
            state.pager = try client.makePager(state.description, keepsItems: state.keepsItems, lookAhead: lookAhead)
        }
    }

    /// The client the list runs with (its own transport and headers); refused once it has run.
    private func clientForTheRun(_ state: State) throws(SheafError) -> SheafClient {
        guard !state.started else { throw SheafError(.state, "a list runs once; create a new list to run it again") }
        return try client.makeClient(transport: state.transport, headers: state.headers)
    }

    /// The run: the list's one run, or a load-more list's current one.
    var run: ListRun? { state.withLock { $0.current } }
    var pager: ListPager? { state.withLock { $0.pager } }

    func recordError(_ error: SheafError?) {
        state.withLock { $0.lastError = error }
    }

    var lastError: SheafError? { state.withLock { $0.lastError ?? ($0.inGroup ? $0.run?.outcome?.error : nil) } }

    /// A call succeeded: the error of an earlier call goes, unless it is the run's outcome.
    func clearErrorBeforeTheOutcome() {
        state.withLock { state in
            if state.current?.outcome == nil { state.lastError = nil }
        }
    }

    /// The description as pinned (before a run) or as the run uses it.
    /// For a list that syncs, the state through the snapshots the caller has seen (before the
    /// run, the one it starts from), with the list it is of.
    func descriptionJSON() -> [UInt8] {
        let (run, seen, description) = state.withLock { ($0.current, $0.seen, $0.description) }
        if let run { return run.descriptionJSON(syncThrough: seen) }
        let sync = description.syncState(greatest: nil).map { state in
            (list: (try? client.makeClient()).flatMap { try? $0.listURL(of: description) }, state: state)
        }
        return description.json(resolution: nil, plan: nil, sync: sync)
    }
    /// The URL of the list's first page, redacted (`ListRun.url`); before the run, the one it
    /// would start from.
    func url() throws(SheafError) -> String {
        let (run, description) = state.withLock { ($0.current, $0.description) }
        if let run { return run.url }
        return try client.makeClient().listURL(of: description)
    }

    var pull: SnapshotChannel<PulledSnapshot>? { state.withLock { $0.pull } }

    /// Whether the delta of the snapshot the caller has now (the callback's, or the one taken
    /// last) holds 19 digits in a row: found when asked, so no snapshot pays for it unasked.
    var deltaHasLongDigits: Bool {
        beingDelivered.hasLongDigits ?? state.withLock { $0.lastTaken }?.deltaHasLongDigits ?? false
    }

    /// Keeps `pulled` as the snapshot handed out last; returns its C view.
    func handOut(_ pulled: PulledSnapshot) -> UnsafePointer<sheaf_snapshot> {
        state.withLock { $0.lastTaken = pulled }
        return UnsafePointer(pulled.value)
    }

    /// The prefix the caller has seen (`State.seen`), as `ListRun.prefixPieces` gives it.
    func prefixPieces() -> [ArraySlice<UInt8>] {
        let (run, seen) = state.withLock { ($0.current, $0.seen) }
        guard let run, let seen else { return [] }
        return run.prefixPieces(through: seen)
    }
    var keepsItems: Bool { state.withLock { $0.keepsItems } }

    /// The token that resumes after the prefix the caller has seen; before the run, the one it
    /// would resume from.
    func resumeToken() -> ResumeToken? {
        let (run, seen, description) = state.withLock { ($0.current, $0.seen, $0.description) }
        guard let run else { return description.resume }
        return run.resumeToken(through: seen)
    }

    /// Where the list stands (sheaf_list_get_status).
    func status() -> sheaf_list_status {
        let (run, seen, pager) = state.withLock { ($0.current, $0.seen, $0.pager) }
        var status = sheaf_list_status()
        if let pager {
            status.pages_ready = Int64(pager.pagesReady)
            switch pager.status {
            case .idle: status.state = SHEAF_LIST_IDLE
            case .loading: status.state = SHEAF_LIST_LOADING
            case .ended: status.state = SHEAF_LIST_ENDED
            }
        } else {
            status.state = run == nil ? SHEAF_LIST_NEW : run?.outcome == nil ? SHEAF_LIST_LOADING : SHEAF_LIST_ENDED
        }
        status.items = Int64(seen?.delta.totalItems ?? 0)
        status.pages = Int64(seen?.delta.pages ?? 0)
        status.expected_items = Int64(seen?.expectedItems ?? -1)
        status.expected_pages = Int64(seen?.expectedPages ?? -1)
        status.requests_made = Int64(run?.requestsMade ?? 0)
        status.requests_in_flight = Int64(run?.requestsInFlight ?? 0)
        status.window = Int64(run?.window ?? 0)
        if status.state == SHEAF_LIST_ENDED, let outcome = pager?.outcome ?? run?.outcome {
            status.stop_reason = run?.reachedBound == true ? SHEAF_STOP_BOUND : outcome.cStopReason
        }
        return status
    }

    static func from(_ pointer: OpaquePointer?) -> ListHandle? {
        pointer.map { Unmanaged<ListHandle>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

/// Runs `body` against the list behind `list`, turning a thrown error into the list's and the
/// thread's error.
private func withList(_ list: OpaquePointer?, _ body: (ListHandle) throws(SheafError) -> Void) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return failure(SheafError(.invalidArgument, "the list must not be NULL")) }
    do {
        try body(handle)
        handle.clearErrorBeforeTheOutcome()
        return success()
    } catch {
        return failure(error, on: handle)
    }
}

/// Records the run's outcome on the handle and returns its code.
private func report(_ outcome: ListOutcome, on handle: ListHandle) -> sheaf_result {
    if let error = outcome.error { return failure(error, on: handle) }
    handle.recordError(nil)
    return success()
}

/// Copies `json` for the caller into the out-parameters.
private func handOver(_ json: [UInt8], _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
                      _ outLength: UnsafeMutablePointer<Int>?) {
    outJSON.pointee = CString.mallocCopy(json)
    outLength?.pointee = json.count
}

/// Hands a JSON array of the prefix's `pieces` to the caller: written once, straight into the
/// malloc'd buffer (a list's JSON is never copied whole on the Swift side first).
private func handOver(_ pieces: [ArraySlice<UInt8>], _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
                      _ outLength: UnsafeMutablePointer<Int>?) {
    let length = pieces.reduce(2) { $0 + $1.count }
    guard let memory = malloc(length + 1)?.assumingMemoryBound(to: UInt8.self) else { return }
    memory[0] = UInt8(ascii: "[")
    var at = 1
    for piece in pieces {
        piece.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress { memcpy(memory + at, base, bytes.count) }
        }
        at += piece.count
    }
    memory[at] = UInt8(ascii: "]")
    memory[at + 1] = 0
    outJSON.pointee = UnsafeMutableRawPointer(memory).assumingMemoryBound(to: CChar.self)
    outLength?.pointee = length
}

// MARK: - Exports

@c @implementation
public func sheaf_list_new(_ outList: UnsafeMutablePointer<OpaquePointer?>?, _ client: OpaquePointer?,
                           _ path: UnsafePointer<CChar>?) -> sheaf_result {
    guard let outList else { return failure(SheafError(.invalidArgument, "out_list must not be NULL")) }
    outList.pointee = nil
    guard let clientHandle = ClientHandle.from(client) else { return failure(SheafError(.invalidArgument, "the client must not be NULL")) }
    let listPath: String
    do throws(SheafError) {
        listPath = try CString.required(path, "the list path")
    } catch {
        return failure(error)
    }
    let handle = ListHandle(client: clientHandle, path: listPath)
    outList.pointee = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
    return success()
}

@c @implementation
public func sheaf_list_free(_ list: OpaquePointer?) {
    guard let list, let handle = ListHandle.from(list) else { return }
    // A pulled list first lets go of its snapshots, so a delivery waiting for room returns.
    handle.pull?.close()
    handle.pager?.close()
    handle.notifyTarget.withLock { $0 = -1 }   // the caller may close its fd once this returns
    // Cancels and waits out a running callback; from inside the list's own callback it only
    // cancels, and the run's hold on the handle ends after that callback returns.
    handle.run?.close()
    Unmanaged<ListHandle>.fromOpaque(UnsafeRawPointer(list)).release()
}

@c @implementation
public func sheaf_list_error(_ list: OpaquePointer?) -> UnsafeMutablePointer<sheaf_error>? {
    ListHandle.from(list)?.lastError.map(cError)
}

private let emptyText = OwnedCString("")

@c @implementation
public func sheaf_list_add_query(_ list: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                 _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let name = try CString.nonEmpty(name, "the query parameter name")
        let value = try CString.required(value, "the query value")
        try handle.describe { $0.query.append((name, value)) }
    }
}

@c @implementation
public func sheaf_list_add_header(_ list: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                  _ value: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        try handle.addHeader(HTTPHeader(name: try CString.nonEmpty(name, "the header name"), value: try CString.text(value, "the header value") ?? ""))
    }
}

@c @implementation
public func sheaf_list_set_paging(_ list: OpaquePointer?, _ kind_: sheaf_paging, _ param: UnsafePointer<CChar>?,
                                  _ first: Int64, _ sizeParam: UnsafePointer<CChar>?, _ size: Int64) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let kind: String
        switch kind_ {
        case SHEAF_PAGING_DETECT: kind = "detect"
        case SHEAF_PAGING_SINGLE: kind = "single"
        case SHEAF_PAGING_NEXT: kind = "next"
        case SHEAF_PAGING_PAGE_NUMBER: kind = "page_number"
        case SHEAF_PAGING_OFFSET: kind = "offset"
        case SHEAF_PAGING_CURSOR: kind = "cursor"
        default: throw SheafError(.invalidArgument, "unknown paging kind \(kind_.rawValue)")
        }
        // What the header says is ignored for a kind is not passed on; the core judges the rest.
        let takesParameter = kind == "page_number" || kind == "offset" || kind == "cursor"
        let parameter = takesParameter ? (try CString.text(param, "the paging parameter") ?? "") : nil
        let sizeParameter = try CString.text(sizeParam, "the page size parameter")
        let numbered = kind == "page_number" || kind == "offset"
        let paging: Paging
        do throws(DescriptionRefusal) {
            paging = try Paging.described(kind: kind, parameter: parameter, first: numbered ? Int(clamping: first) : 0,
                                          sizeParameter: sizeParameter, size: sizeParameter == nil ? nil : Int(clamping: size))
        } catch {
            throw error.asError
        }
        try handle.describe { $0.paging = paging }
    }
}

@c @implementation
public func sheaf_list_set_signal(_ list: OpaquePointer?, _ signal: sheaf_signal, _ source: sheaf_source,
                                  _ location: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let which: Signal
        switch signal {
        case SHEAF_SIGNAL_ITEMS: which = .items
        case SHEAF_SIGNAL_NEXT: which = .next
        case SHEAF_SIGNAL_CURSOR: which = .cursor
        case SHEAF_SIGNAL_TOTAL: which = .total
        case SHEAF_SIGNAL_PAGE_COUNT: which = .pageCount
        case SHEAF_SIGNAL_HAS_MORE: which = .hasMore
        case SHEAF_SIGNAL_IS_LAST: which = .isLast
        case SHEAF_SIGNAL_IDENTITY: which = .identity
        default: throw SheafError(.invalidArgument, "unknown signal \(signal.rawValue)")
        }
        let kind: String
        switch source {
        case SHEAF_SOURCE_NONE: kind = "none"
        case SHEAF_SOURCE_DETECT: kind = "detect"
        case SHEAF_SOURCE_BODY: kind = "body"
        case SHEAF_SOURCE_HEADER: kind = "header"
        case SHEAF_SOURCE_LINK: kind = "link"
        case SHEAF_SOURCE_ITEM: kind = "item"
        case SHEAF_SOURCE_LAST_ITEM: kind = "last_item"
        default: throw SheafError(.invalidArgument, "unknown source \(source.rawValue)")
        }
        // `where` is ignored for NONE and DETECT; the core judges the rest.
        let location = source == SHEAF_SOURCE_NONE || source == SHEAF_SOURCE_DETECT ? nil : try CString.text(location, "where")
        let from: SignalSource
        do throws(DescriptionRefusal) {
            from = try SignalSource.described(which, kind: kind, where: location)
        } catch {
            throw error.asError
        }
        try handle.describe { $0.signals[which] = from }
    }
}

@c @implementation
public func sheaf_list_set_description(_ list: OpaquePointer?, _ json: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let text = try CString.required(json, "the description")
        // Read whole before the list changes: a refused description leaves it as it was.
        try handle.describe { (description) throws(SheafError) in try description.describe(json: Array(text.utf8)) }
    }
}

@c @implementation
public func sheaf_list_use_preset(_ list: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let preset = try Preset.named(try CString.nonEmpty(name, "the preset name"))
        try handle.describe { $0 = preset.applied(to: $0) }
    }
}

@c @implementation
public func sheaf_list_description(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                   _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard let outJSON else { throw SheafError(.invalidArgument, "out_json must not be NULL") }
        handOver(handle.descriptionJSON(), outJSON, outLength)
    }
}

@c @implementation
public func sheaf_list_url(_ list: OpaquePointer?, _ outURL: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> sheaf_result {
    guard let outURL else { return failure(SheafError(.invalidArgument, "out_url must not be NULL")) }
    outURL.pointee = nil
    return withList(list) { (handle) throws(SheafError) in
        outURL.pointee = CString.mallocCopy(try handle.url())
    }
}

@c @implementation
public func sheaf_preset_count() -> Int {
    Preset.all.count
}

private let presetNames = Preset.all.map { OwnedCString($0.name) }

@c @implementation
public func sheaf_preset_name(_ index: Int) -> UnsafePointer<CChar>? {
    index >= 0 && index < presetNames.count ? UnsafePointer(presetNames[index].pointer) : nil
}

@c @implementation
public func sheaf_preset_description(_ name: UnsafePointer<CChar>?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                     _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let outJSON else { return failure(SheafError(.invalidArgument, "out_json must not be NULL")) }
    outJSON.pointee = nil
    outLength?.pointee = 0
    do {
        let preset = try Preset.named(try CString.nonEmpty(name, "the preset name"))
        handOver(preset.descriptionJSON, outJSON, outLength)
        return success()
    } catch {
        return failure(error)
    }
}

@c @implementation
public func sheaf_list_set_max_items(_ list: OpaquePointer?, _ maxItems: Int64) -> sheaf_result {
    sheaf_list_set_budget(list, SHEAF_BUDGET_ITEMS, maxItems)
}

@c @implementation
public func sheaf_list_set_budget(_ list: OpaquePointer?, _ budget: sheaf_budget, _ value: Int64) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard value >= 0, let amount = Int(exactly: value) else { throw SheafError(.invalidArgument, "a budget must not be negative") }
        let limit = amount == 0 ? nil : amount
        switch budget {
        case SHEAF_BUDGET_ITEMS: try handle.describe { $0.maxItems = limit }
        case SHEAF_BUDGET_PAGES: try handle.describe { $0.maxPages = limit }
        case SHEAF_BUDGET_REQUESTS: try handle.describe { $0.maxRequests = limit }
        case SHEAF_BUDGET_DEADLINE_MS: try handle.describe { $0.deadlineMilliseconds = limit }
        default: throw SheafError(.invalidArgument, "unknown budget \(budget.rawValue)")
        }
    }
}

@c @implementation
public func sheaf_list_set_resume(_ list: OpaquePointer?, _ token: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let token = try token.map { (text) throws(SheafError) in try ResumeToken(String(cString: text)) }
        try handle.describe { $0.resume = token }
    }
}

@c @implementation
public func sheaf_list_resume_token(_ list: OpaquePointer?, _ outToken: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> sheaf_result {
    guard let outToken else { return failure(SheafError(.invalidArgument, "out_token must not be NULL")) }
    outToken.pointee = nil
    return withList(list) { handle in
        outToken.pointee = handle.resumeToken().flatMap { CString.mallocCopy($0.description) }
    }
}

@c @implementation
public func sheaf_list_partitions(_ list: OpaquePointer?, _ n: Int64, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                  _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    sheaf_list_partitions_at_once(list, n, n, outJSON, outLength)
}

@c @implementation
public func sheaf_list_partitions_at_once(_ list: OpaquePointer?, _ n: Int64, _ atOnce: Int64,
                                          _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                          _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    outJSON?.pointee = nil
    outLength?.pointee = 0
    return withList(list) { (handle) throws(SheafError) in
        guard let outJSON else { throw SheafError(.invalidArgument, "out_json must not be NULL") }
        guard n >= 1, let count = Int(exactly: n) else {
            throw SheafError(.invalidArgument, "the number of partitions must be 1 or more, not \(n)")
        }
        let partitions = try handle.partitions(count: count, atOnce: Int(clamping: atOnce))
        var json: [UInt8] = [UInt8(ascii: "[")]
        for (index, partition) in partitions.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json += partition.json
        }
        json.append(UInt8(ascii: "]"))
        handOver(json, outJSON, outLength)
    }
}

@c @implementation
public func sheaf_list_set_partition(_ list: OpaquePointer?, _ json: UnsafePointer<CChar>?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        let text = try CString.required(json, "the partition")
        try handle.setPartition(try Partition(text))
    }
}

@c @implementation
public func sheaf_list_set_keep_items(_ list: OpaquePointer?, _ keep: Int32) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in try handle.setKeepsItems(keep != 0) }
}

@c @implementation
public func sheaf_list_set_notify_fd(_ list: OpaquePointer?, _ fd: Int32) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in try handle.setNotifyFD(fd) }
}

/// One notification of sheaf_list_set_notify_fd: 8 bytes holding 1 (an eventfd's increment).
/// A socket is written without blocking or SIGPIPE; anything else (an eventfd, a pipe) with
/// write(2), as the header says. A failed write needs nothing: a full fd has one pending.
extension Locked<Int32> {
    /// Writes a wake-up to the fd held, unless it was let go (-1): under the lock, so once the
    /// free has set -1 no write can still be on its way to an fd the caller may have closed.
    func wake() {
        withLock { fd in if fd >= 0 { notify(fd) } }
    }
}

private func notify(_ fd: Int32) {
    var one: UInt64 = 1
    withUnsafeBytes(of: &one) { bytes in
        if send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) < 0, errno == ENOTSOCK {
            _ = write(fd, bytes.baseAddress, bytes.count)
        }
    }
}

@c @implementation
public func sheaf_list_set_transport(_ list: OpaquePointer?, _ transport: sheaf_transport_fn?,
                                     _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withList(list) { (handle) throws(SheafError) in
            try handle.setTransport(transport.map { CFunctionTransport(function: $0, userData: owned) })
        }
    }
}

@c @implementation
public func sheaf_list_start(_ list: OpaquePointer?, _ onSnapshot: sheaf_snapshot_fn?,
                             _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withList(list) { (handle) throws(SheafError) in
            var deliver: (@Sendable (Snapshot) -> Bool)? = nil
            if let onSnapshot {
                let callback = SnapshotCallback(function: onSnapshot, userData: owned, list: handle)
                deliver = { callback.call($0) }
            } else {
                // Nothing calls back: the user data is released when the run ends.
                deliver = { _ in withExtendedLifetime(owned) { true } }
            }
            _ = try handle.start(onSnapshot: deliver)
        }
    }
}

@c @implementation
public func sheaf_list_start_write(_ list: OpaquePointer?, _ format: sheaf_format, _ write: sheaf_write_fn?,
                                   _ userData: UnsafeMutableRawPointer?, _ destroy: sheaf_destroy_fn?) -> sheaf_result {
    registering(userData, destroy: destroy) { owned in
        withList(list) { (handle) throws(SheafError) in
            guard let write else { throw SheafError(.invalidArgument, "the write function must not be NULL") }
            try startOutput(handle, format) { bytes in
                let done = write(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, owned.pointer) == 0
                return done ? nil : SheafError(.stopped, "the write function asked to stop")
            }
        }
    }
}

@c @implementation
public func sheaf_list_start_write_fd(_ list: OpaquePointer?, _ fd: Int32, _ format: sheaf_format) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard fd >= 0 else { throw SheafError(.invalidArgument, "the file descriptor must be 0 or more") }
        try startOutput(handle, format, ItemOutput.fileDescriptor(fd))
    }
}

/// Starts `handle`'s list writing its items to `sink` in `format` (items not kept).
private func startOutput(_ handle: ListHandle, _ format: sheaf_format, _ sink: @escaping ItemOutput.Sink) throws(SheafError) {
    guard let format = ItemFormat(rawValue: Int(format.rawValue)) else {
        throw SheafError(.invalidArgument, "unknown output format \(format.rawValue)")
    }
    let output = ItemOutput(format: format, sink: sink)
    _ = try handle.start(keepingItems: false, onSnapshot: { output.write($0.delta) }, finishing: output.finish)
}

@c @implementation
public func sheaf_list_start_pull(_ list: OpaquePointer?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        _ = try handle.start(onSnapshot: nil, pulling: true)
    }
}

@c @implementation
public func sheaf_list_next(_ list: OpaquePointer?, _ timeoutMs: Int64,
                            _ outSnapshot: UnsafeMutablePointer<UnsafePointer<sheaf_snapshot>?>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outSnapshot else {
        return failure(SheafError(.invalidArgument, "the list and out_snapshot must not be NULL"))
    }
    outSnapshot.pointee = nil
    guard let pull = handle.pull else {
        return failure(SheafError(.state, "the list was not started with sheaf_list_start_pull"), on: handle)
    }
    if timeoutMs != 0, CallbackContext.isInsideCallback {
        return failure(SheafError.blockingCallInsideCallback, on: handle)
    }
    let timeout: Int? = timeoutMs < 0 ? nil : Int(clamping: timeoutMs)
    switch pull.next(timeoutMilliseconds: timeout) {
    case .snapshot(let snapshot):
        outSnapshot.pointee = handle.handOut(snapshot)
    case .end:
        // The outcome is decided once every snapshot has been taken: sheaf_list_error has it.
        if case .failed(let error)? = handle.run?.outcome { handle.recordError(error) }
    case .pending:
        return success(SHEAF_PENDING)
    }
    return success()
}

@c @implementation
public func sheaf_list_delta_has_long_digits(_ list: OpaquePointer?, _ outLong: UnsafeMutablePointer<Int32>?) -> sheaf_result {
    answerLongDigits(of: ListHandle.from(list), "the list", into: outLong)
}

@c @implementation
public func sheaf_list_wait(_ list: OpaquePointer?) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return failure(SheafError(.invalidArgument, "the list must not be NULL")) }
    if let pager = handle.pager {
        guard let outcome = pager.outcome else {
            return failure(SheafError(.state, "a load-more list goes on only as sheaf_list_more asks: it has not ended"), on: handle)
        }
        return report(outcome, on: handle)
    }
    guard let run = handle.run else { return failure(SheafError(.state, "the list has not been started"), on: handle) }
    if !CallbackContext.isInsideCallback { handle.pull?.close() } // nobody takes snapshots any more
    do {
        return report(try run.wait(), on: handle)
    } catch {
        return failure(error, on: handle)
    }
}

@c @implementation
public func sheaf_list_cancel(_ list: OpaquePointer?) -> sheaf_result {
    guard let handle = ListHandle.from(list) else { return failure(SheafError(.invalidArgument, "the list must not be NULL")) }
    if let pager = handle.pager { pager.cancel() } else { handle.run?.cancel() }
    return success()
}

@c @implementation
public func sheaf_list_requests_made(_ list: OpaquePointer?) -> Int64 {
    Int64(ListHandle.from(list)?.run?.requestsMade ?? 0)
}

@c @implementation
public func sheaf_list_requests_in_flight(_ list: OpaquePointer?) -> Int64 {
    Int64(ListHandle.from(list)?.run?.requestsInFlight ?? 0)
}

@c @implementation
public func sheaf_list_prefix(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                              _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outJSON else {
        return failure(SheafError(.invalidArgument, "the list and out_json must not be NULL"))
    }
    outJSON.pointee = nil
    outLength?.pointee = 0
    guard handle.keepsItems else {
        return failure(SheafError(.state, "the list does not keep its items (sheaf_list_set_keep_items)"), on: handle)
    }
    handOver(handle.prefixPieces(), outJSON, outLength)
    return success()
}

@c @implementation
public func sheaf_list_fetch_all(_ list: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                                 _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outJSON else {
        return failure(SheafError(.invalidArgument, "the list and out_json must not be NULL"))
    }
    outJSON.pointee = nil
    outLength?.pointee = 0
    guard !CallbackContext.isInsideCallback else {
        return failure(SheafError.blockingCallInsideCallback, on: handle)
    }
    let result: sheaf_result
    let run: ListRun
    do {
        run = try handle.start(keepingItems: true, onSnapshot: nil)
        result = report(try run.wait(), on: handle)
    } catch {
        handOver([ArraySlice<UInt8>](), outJSON, outLength)
        return failure(error, on: handle)
    }
    handOver(run.prefixPieces(through: nil), outJSON, outLength)
    return result
}

@c @implementation
public func sheaf_list_get_status(_ list: OpaquePointer?, _ outStatus: UnsafeMutablePointer<sheaf_list_status>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outStatus else {
        return failure(SheafError(.invalidArgument, "the list and out_status must not be NULL"))
    }
    // The bytes each version has: a field appended later starts where the version before ends,
    // so version 2 adds `MemoryLayout.offset(of:)` of its first field as version 1's end here.
    // The caller's struct is as large as its header's version: the fields both versions know are
    // filled, and `version` says which that was.
    let versionEnds = [MemoryLayout<sheaf_list_status>.size]
    let asked = outStatus.pointee.version
    guard asked >= 1 else {
        return failure(SheafError(.invalidArgument, "out_status->version must be set (SHEAF_LIST_STATUS_VERSION)"))
    }
    let filled = min(Int(asked), versionEnds.count)
    var status = handle.status()
    status.version = UInt32(filled)
    withUnsafeBytes(of: &status) { bytes in
        UnsafeMutableRawPointer(outStatus).copyMemory(from: bytes.baseAddress!, byteCount: versionEnds[filled - 1])
    }
    return success()
}

@c @implementation
public func sheaf_list_start_load_more(_ list: OpaquePointer?, _ lookAhead: Int64) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard let pages = Int(exactly: lookAhead) else { throw SheafError(.invalidArgument, "the look-ahead is out of range") }
        try handle.startLoadMore(lookAhead: pages)
    }
}

@c @implementation
public func sheaf_list_more(_ list: OpaquePointer?, _ timeoutMs: Int64, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                            _ outLength: UnsafeMutablePointer<Int>?) -> sheaf_result {
    guard let handle = ListHandle.from(list), let outJSON else {
        return failure(SheafError(.invalidArgument, "the list and out_json must not be NULL"))
    }
    outJSON.pointee = nil
    outLength?.pointee = 0
    guard let pager = handle.pager else {
        return failure(SheafError(.state, "the list was not started with sheaf_list_start_load_more"), on: handle)
    }
    do {
        switch try pager.next(timeoutMilliseconds: timeoutMs < 0 ? nil : Int(clamping: timeoutMs)) {
        case .page(let page):
            handOver(page.delta.json, outJSON, outLength)
            return success()
        case .pending:
            return success(SHEAF_PENDING)
        case .end(let outcome):
            return report(outcome, on: handle)
        }
    } catch {
        return failure(error, on: handle)
    }
}

@c @implementation
public func sheaf_list_reset(_ list: OpaquePointer?) -> sheaf_result {
    withList(list) { (handle) throws(SheafError) in
        guard let pager = handle.pager else { throw SheafError(.state, "the list was not started with sheaf_list_start_load_more") }
        pager.reset()
    }
}

/// The C view of a snapshot whose delta is at `json` (NUL-terminated, `length` bytes before it).
private func cSnapshot(_ snapshot: Snapshot, json: UnsafePointer<CChar>, length: Int) -> sheaf_snapshot {
    sheaf_snapshot(
        version: UInt32(SHEAF_SNAPSHOT_VERSION),
        delta_json: json,
        delta_length: length,
        delta_items: snapshot.delta.items,
        items: snapshot.delta.totalItems,
        pages: snapshot.delta.pages,
        expected_items: Int64(snapshot.expectedItems ?? -1),
        expected_pages: Int64(snapshot.expectedPages ?? -1))
}

/// Calls a C snapshot callback with a `sheaf_snapshot` built from a Swift snapshot.
private struct SnapshotCallback: Sendable {
    let function: sheaf_snapshot_fn
    let userData: CUserData
    /// Holds the list handle until the run drops its callback (after its last snapshot), so a
    /// sheaf_list_free from inside the callback releases nothing the callback still uses.
    let list: ListHandle

    func call(_ snapshot: Snapshot) -> Bool {
        var json = snapshot.delta.json
        json.append(0)
        return json.withUnsafeBufferPointer { buffer in
            var value = cSnapshot(snapshot, json: UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self),
                                  length: buffer.count - 1)
            let listPointer = OpaquePointer(Unmanaged.passUnretained(list).toOpaque())
            return list.beingDelivered.during(snapshot.delta.json) { function(listPointer, &value, userData.pointer) == 0 }
        }
    }
}

/// A snapshot handed out by sheaf_list_next: C memory its list owns until the next call or
/// the free.
final class PulledSnapshot: @unchecked Sendable {
    // Safe: immutable after init (C only reads it); freed once in deinit.
    let value: UnsafeMutablePointer<sheaf_snapshot>
    /// The snapshot without its delta (the counts, and where the prefix ends).
    let snapshot: Snapshot
    private let json: UnsafeMutablePointer<CChar>?

    init(_ snapshot: Snapshot) {
        self.snapshot = snapshot.counts
        json = CString.mallocCopy(snapshot.delta.json)
        value = .allocate(capacity: 1)
        value.initialize(to: cSnapshot(snapshot, json: json.map { UnsafePointer($0) } ?? UnsafePointer(emptyText.pointer),
                                       length: json == nil ? 0 : snapshot.delta.json.count))
    }

    /// Whether the delta holds 19 or more digits in a row.
    var deltaHasLongDigits: Bool { hasLongDigitRun(json, count: value.pointee.delta_length) }

    deinit {
        value.deallocate()
        free(json)
    }
}

/// A handle that hands out deltas (a list's snapshots, a group's deltas) and says whether the one
/// the caller has now holds 19 digits in a row.
protocol HandsOutDeltas {
    var deltaHasLongDigits: Bool { get }
}

extension ListHandle: HandsOutDeltas {}
extension GroupHandle: HandsOutDeltas {}

/// sheaf_list_delta_has_long_digits and sheaf_group_delta_has_long_digits: `handle`'s answer
/// (`what` names it) into `outLong`.
func answerLongDigits(of handle: (some HandsOutDeltas)?, _ what: String, into outLong: UnsafeMutablePointer<Int32>?) -> sheaf_result {
    guard let handle, let outLong else { return failure(SheafError(.invalidArgument, "\(what) and out_long must not be NULL")) }
    outLong.pointee = handle.deltaHasLongDigits ? 1 : 0
    return success()
}

/// The delta a handle's callback is being given, while the callback runs: what
/// sheaf_list_delta_has_long_digits and sheaf_group_delta_has_long_digits read then (a pulled
/// list's or group's is the one it handed out last).
final class DeltaBeingDelivered: Sendable {
    private let bytes = Locked<[UInt8]?>(nil)

    /// Runs `callback` with `delta` as the one being delivered.
    func during<Result>(_ delta: [UInt8], _ callback: () -> Result) -> Result {
        bytes.withLock { $0 = delta }
        defer { bytes.withLock { $0 = nil } }
        return callback()
    }

    /// Whether it holds 19 digits in a row; nil while no callback runs.
    var hasLongDigits: Bool? { bytes.withLock { $0 }?.withUnsafeBytes(hasLongDigitRun) }
}

/// Whether the `count` bytes of C text at `text` hold 19 or more digits in a row.
func hasLongDigitRun(_ text: UnsafePointer<CChar>?, count: Int) -> Bool {
    hasLongDigitRun(UnsafeRawBufferPointer(start: text, count: text == nil ? 0 : count))
}

/// Whether `json` holds 19 or more ASCII digits in a row: an integer that may not fit 64 bits
/// (18 digits always do), or digits in a string. Such a run covers a whole aligned 8-byte word
/// of digits, so words are tested 8 bytes at a time and a run is measured only around one.
func hasLongDigitRun(_ bytes: UnsafeRawBufferPointer) -> Bool {
    let count = bytes.count
    @inline(__always) func isDigit(_ index: Int) -> Bool { bytes[index] &- UInt8(ascii: "0") < 10 }
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    var word = 0
    while word + 8 <= count {
        let value = bytes.loadUnaligned(fromByteOffset: word, as: UInt64.self)
        let low = value & ~highs
        // A byte is a digit when its high bit is clear, it is at least 0x30 and below 0x3A.
        let notDigit = (~(low &+ 0x50 &* ones) | (low &+ 0x46 &* ones) | value) & highs
        if notDigit == 0 {
            var start = word, end = word + 8
            while start > 0, isDigit(start - 1) { start -= 1 }
            while end < count, isDigit(end) { end += 1 }
            if end - start >= 19 { return true }
            word = (end + 7) / 8 * 8
        } else {
            word += 8
        }
    }
    return false
}
