/// Where a run starts, computed once from its description and its client: a partition's range,
/// a `since` filter, a resume token and a range split decide the first URL, the pages asked for
/// ahead of page one, and the planner, assembler and state the run starts with. Nothing is sent.
struct RunStart {
    /// The description as the run reads it (a partition's or a resume token's paging in it).
    let description: ListDescription
    /// The URL of the list's first page (a partition's: its range's first), before a `since`
    /// parameter, with no credential or secret query value (`ListRun.url`).
    let url: String
    /// What a resume token of this run is bound to (`ResumeToken.fingerprint`).
    let fingerprint: UInt64
    /// Where the run starts.
    let point: ResumePoint
    /// The window of the list's origin, shared with the client's other lists there.
    let pace: OriginPace
    /// The run's decisions, before its first event.
    let state: RunState
    /// How each page is asked for: a GET, or the list's method and body.
    let pageTemplate: FetchTemplate

    /// - Parameter deliversItems: the run's snapshots carry their items (a callback or a channel
    ///   takes them).
    init(client: SheafClient, description: ListDescription, keepsItems: Bool, pageGate: Int?, deliversItems: Bool,
         groupShare: ((Int) -> Int)?, leads: Bool) throws(SheafError) {
        let originalDescription = description
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
        pageTemplate = FetchTemplate(page: try description.pageBody())
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
        var startFailure: SheafError?
        var origin: Int?
        var resumedPageSize: Int?
        var pageBudget = description.maxPages
        if let token = description.resume {
            // The run goes on with what the first run read, from where it stopped.
            guard token.fingerprint == fingerprint else {
                throw SheafError(.invalidArgument, "the resume token was made by another list (another path, query, description or body)")
            }
            guard token.point.url != nil else {
                throw SheafError(.invalidArgument, "the resume token is of a list that had ended: there is nothing to resume")
            }
            // Only a page of the list's own origin and path gets the list's secrets back. In a
            // group, a token that cannot be taken fails its list alone, at its start (see
            // `RunState.Facts.startFailure`): the library's own tokens always go back in.
            do throws(SheafError) {
                let url = try token.startURL(forList: firstURL)
                firstURL = client.redactor.restoringSecretParameters(of: firstURL, in: url, keeping: token.paging.parameter)
                origin = token.paging.first
                resumedPageSize = token.pageSize
                let position = try token.position(in: firstURL)
                description.paging = token.paging.starting(at: position ?? origin ?? 0)
                description.signals = token.signals
                start = ResumePoint(url: firstURL, skip: token.point.skip, itemsBefore: token.point.itemsBefore)
            } catch {
                guard groupShare != nil else { throw error }
                startFailure = client.redacting(error)
            }
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
        let configuration = client.configuration
        let needsDetection = description.paging == .detect || Signal.allCases.contains { description.source(of: $0) == .detect }
        let resolution = needsDetection ? nil : Detector.Resolution(description: description, detected: [], pagingDetected: false)
        pace = client.pace(for: firstURL)
        let windowShare = partition?.window ?? .max
        let window = min(pace.window, windowShare, groupShare?(pace.window) ?? .max)
        let ahead = Self.pagesAhead(description, window: plannedPages == nil ? min(window, configuration.window) : window,
                                    asksAhead: client.asksAhead(of: firstURL))
        let planner = PagePlanner(firstURL: firstURL, paging: description.paging == .detect ? .next : description.paging,
                                  pagesSignalTheEnd: PageReader(description).pagesSignalTheEnd,
                                  window: window, maxPages: configuration.maxPages,
                                  pageBudget: pageBudget, pageGate: pageGate, origin: origin,
                                  resumedPageSize: resumedPageSize, pagesAhead: min(plannedPages ?? .max, ahead),
                                  rangeFilter: description.split.map { ($0, pieceTemplate, Self.pieceTarget(configuration, pageBudget: pageBudget)) })
        let assembler = Assembler(keepsItems: keepsItems, maxItems: description.maxItems,
                                  deduplicates: description.source(of: .identity) != .none, skipsOnFirstPage: start.skip,
                                  deltaPerPage: pageGate != nil, deltasCarryItems: deliversItems,
                                  floor: description.syncFloor, ceiling: description.syncCeiling, recordsSync: description.syncField != nil)
        let facts = RunState.Facts(partitionEnd: partitionEnd, consumerWindow: configuration.window,
                                   maxBodyBytes: configuration.maxBodyBytes, syncs: description.syncField != nil,
                                   leads: leads, windowShare: windowShare, firstURL: start.url ?? firstURL,
                                   detectsPaging: (originalDescription.paging == .detect || partition?.pagingDetected == true)
                                       && description.resume == nil,
                                   startFailure: startFailure, keptToken: startFailure == nil ? nil : description.resume,
                                   redacting: { [client] in client.redacting($0) })
        self.description = description
        point = start
        state = RunState(facts: facts, planner: planner, assembler: assembler, start: start, resolution: resolution)
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
        // A list that syncs opens its window as it goes (`RunState.inFlightLimit`): page one alone first.
        if description.syncField != nil { return 1 }
        let ahead = min(window, description.maxRequests ?? .max, asksAhead ? .max : pagesAheadOfAnUntriedOrigin)
        guard let maxItems = description.maxItems else { return ahead }
        guard let size = description.paging.size?.value, size > 0 else { return 1 }
        return min(ahead, maxItems / size + (maxItems % size == 0 ? 0 : 1))
    }

    /// Pages (page one included) asked for before page one answers, without a credential, on an
    /// origin that has not answered one yet.
    static let pagesAheadOfAnUntriedOrigin = 2

    /// The most the pages asked for ahead of page one may bring between them (32 MiB): each of
    /// `pagesAhead` may bring its share, and never less than an eighth (4 MiB for the eight a
    /// list starts with; 1 MiB each for the 32 of a partition sent on a window grown to 32).
    static func aheadBodyCap(pagesAhead: Int) -> Int { (32 << 20) / max(8, pagesAhead) }

    /// The pieces a split list is cut into: four per request the window may have in flight
    /// (a piece that proves long leaves the others to fill the window), and no more than a page
    /// budget can reach after page one (a budget of 4 pages delivers 3 pieces' worth, not 3 of 256;
    /// a budget of page one alone, a plan of partitions, plans them all).
    static func pieceTarget(_ configuration: ClientConfiguration, pageBudget: Int?) -> Int {
        min(4 * max(configuration.window, configuration.maxWindow), pageBudget.map { $0 > 1 ? $0 - 1 : .max } ?? .max)
    }
}
