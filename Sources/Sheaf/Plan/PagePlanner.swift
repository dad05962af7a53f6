/// Decides which pages to fetch next from the pages that arrived: a pure state machine.
///
/// Events go in (`start`, `pageArrived`, `pageFailed`); actions come out. It knows nothing of
/// HTTP, threads or callbacks, so every plan can be tested synchronously.
struct PagePlanner {
    /// Something the driver must do.
    enum Action: Equatable {
        /// Request page `index` at `url`.
        case fetch(index: Int, url: String)
        /// Hand page `index`, as it arrived, to the assembler.
        case accept(index: Int)
        /// Hand these items of page `index` to the assembler (a split list's page, kept to its
        /// piece's range); `endsPiece`: the piece ends with it, and the page says nothing more.
        case acceptPart(index: Int, items: Range<Int>, endsPiece: Bool)
        /// The page after page `index` in the list's order is page `next` (a piece ends).
        case jump(after: Int, to: Int)
        /// Hand page `index` to the assembler as an empty page: the server answered 404 for it
        /// and for every page after it, so the list really ends before it.
        case acceptEmpty(index: Int)
        /// Drop the pages after `index` the assembler holds: they are past the end of the list.
        case discard(after: Int)
        /// Abandon these in-flight pages.
        case cancel([Int])
        /// The list is over.
        case finish(Ending)
    }

    /// How a list ended, as far as pages go.
    enum Ending: Equatable {
        /// Every page arrived. `expectedTotal` is the server's total, if it gave one, to compare
        /// with the items; `missingPages` are pages the server answered 404 although the total
        /// promised them.
        case allPages(expectedTotal: Int?, missingPages: [Int])
        /// Page `index` could not be had; pages before it were accepted.
        case failed(index: Int, error: SheafError)
        /// A budget of the caller's stopped the list at page `index`, not asked for; pages before
        /// it were accepted. Not a failure: the run ends with this reason.
        case stopped(index: Int, reason: StopReason)
    }

    /// How the remaining pages are found.
    enum Mode: Equatable {
        case firstPage
        /// Pages 1..<pageCount by number, concurrently; then possibly a walk from `continuation`.
        case parallel(pageCount: Int)
        /// Pages by number, concurrently, ahead of knowing where the list ends (no total): the
        /// first page that says it is the last ends it, and what was fetched past it is dropped.
        case speculative
        /// One page at a time, by next link or by page number.
        case sequential
        /// A cursor list split by its range filter: pieces walked side by side (`RangeSplitter`).
        case pieces
    }

    private(set) var paging: Paging
    /// Pages in flight at most; the driver may change it between events (an adaptive window).
    var window: Int
    let maxPages: Int
    /// The caller's page budget: reaching it ends the list, not as a failure.
    let pageBudget: Int?
    /// A load-more list's gate: pages at or past it wait until `raiseGate` lets them go.
    private(set) var pageGate: Int?
    /// The next link (or cursor URL) of a sequential walk that waits at the gate.
    private var gatedLink: (url: String, index: Int)?
    /// For a resumed list, the page number or offset its first run started at (the addressing
    /// value of this run's page 0 is `paging.first`): the pages before it count against the
    /// server's totals.
    let origin: Int?
    /// For a resumed list, the page size its first run was served (this run's page 0 may be short).
    let resumedPageSize: Int?
    /// With page numbers but no signal of the end (next link, cursor, has-more), pages are walked
    /// by number until an empty or short page.
    private(set) var walksPageNumbers: Bool
    /// The step between the addressing values of two pages: 1 for page numbers, the served page
    /// size for offsets (known once page one arrived); nil when pages are not addressable.
    private var step: Int?

    private(set) var mode = Mode.firstPage
    private(set) var expectedTotal: Int?
    private var template: String
    private var inFlight = Set<Int>()
    private var nextIndex = 0
    /// 64-bit hashes of the URLs fetched, for loop detection: a stream of 50,000 pages must not
    /// keep 50,000 URLs. Two URLs of one list colliding is about 1 in 10^11 at the page cap.
    private var fetchedURLs = Set<Int>()
    private(set) var servedPageSize = 0
    /// Pages answered 404 in a parallel plan, with the first such answer.
    private var missingPages: [Int] = []
    private var firstMissingError: SheafError?
    /// The last page that arrived with items; a 404 before it is a hole, not the end.
    private var lastPageWithItems = 0
    /// In a speculative plan, the first page known to be past the end.
    private var endIndex: Int?
    /// In a speculative plan, a next link that left the numbered pages: walked once every page
    /// before it is in.
    private var continuation: String?
    private var pendingNextLink: String?
    /// How many pages (page one included) are asked for before page one answers, when their
    /// addresses are known without it (page numbers, or offsets with a page size sent).
    let pagesAhead: Int
    /// The URLs of those pages while the first page has not answered: they stand if the plan
    /// page one decides asks for the same pages, and are abandoned otherwise.
    private var aheadURLs: [Int: String] = [:]
    /// The earliest page the list cannot go past, and why (a failure, or a budget's stop).
    private var cut: (index: Int, ending: Ending)?
    private(set) var isFinished = false
    /// A cursor list's range filter, and what pieces are built on (see `RangeSplitter`).
    private let rangeFilter: (filter: RangeFilter, template: String, pieceTarget: Int)?
    /// The split of a list walked in pieces (`Mode.pieces`).
    private(set) var split: RangeSplitter?
    /// Why a list with a range filter is walked as one piece, when page one said so.
    private(set) var unsplitReason: String?

    /// - Parameters:
    ///   - firstURL: the first page's URL, with its page parameters already set.
    ///   - hasNextSignal: whether pages name their successor (then a page without one is the last).
    ///   - pagesAhead: the pages to ask for at once when their addresses are known (1: page one
    ///     alone; within the window, the page cap, the page budget and a load-more gate).
    init(firstURL: String, paging: Paging = .next, pagesSignalTheEnd: Bool = true, window: Int, maxPages: Int,
         pageBudget: Int? = nil, pageGate: Int? = nil, origin: Int? = nil, resumedPageSize: Int? = nil,
         pagesAhead: Int = 1, rangeFilter: (filter: RangeFilter, template: String, pieceTarget: Int)? = nil) {
        self.rangeFilter = rangeFilter
        template = firstURL
        self.pagesAhead = pagesAhead
        self.pageGate = pageGate
        self.paging = paging
        self.walksPageNumbers = false
        self.window = window
        self.maxPages = maxPages
        self.pageBudget = pageBudget
        self.origin = origin
        self.resumedPageSize = resumedPageSize
        adopt(paging, pagesSignalTheEnd: pagesSignalTheEnd)
    }

    /// Takes the paging the first page revealed (detection), before that page is handed in.
    mutating func adopt(_ paging: Paging, pagesSignalTheEnd: Bool) {
        self.paging = paging
        switch paging {
        case .pageNumber:
            step = 1
            walksPageNumbers = !pagesSignalTheEnd
        case .offset(let numbering):
            step = numbering.size?.value // the size asked for; the size served once page one is in
            walksPageNumbers = !pagesSignalTheEnd
        default:
            step = nil
            walksPageNumbers = false
        }
    }

    /// Whether every page the plan asks for is known to exist (a total, or a last page's number):
    /// nothing it sends is a guess.
    var asksOnlyForKnownPages: Bool {
        if case .parallel = mode { return pendingNextLink == nil }
        return false
    }

    /// The number of pages the plan expects, once known.
    var expectedPages: Int? {
        switch mode {
        case .parallel(let count) where pendingNextLink == nil: return count
        case .speculative where continuation == nil: return endIndex
        default: return nil
        }
    }

    mutating func start() -> [Action] {
        launch(template) + launchAhead()
    }

    /// Pages 1..<pagesAhead, asked for with page one when their addresses are known without
    /// it: the window fills one round trip earlier. Never a failure: page one decides what the
    /// list is, and a plan that does not need them abandons them.
    private mutating func launchAhead() -> [Action] {
        guard paging.isNumbered, step != nil else { return [] }
        let limit = min(pagesAhead, window, maxPages, pageBudget ?? .max, pageGate ?? .max)
        var actions: [Action] = []
        while nextIndex < limit, let url = url(forIndex: nextIndex) {
            aheadURLs[nextIndex] = url
            actions += launch(url, remembered: false)
        }
        return actions
    }

    /// Page `index` arrived and was read.
    mutating func pageArrived(_ index: Int, _ page: Page) -> [Action] {
        guard !isFinished, inFlight.remove(index) != nil else { return [] }
        // A speculative plan reads each page before anything else: it may end the list there.
        if mode == .speculative { return speculativePageArrived(index, page) }
        if mode == .pieces { return piecePageArrived(index, page) }
        if let cut, index > cut.index { return settleCut() }
        var actions: [Action] = [.accept(index: index)]
        if cut != nil { return actions + settleCut() }
        if !page.items.isEmpty { lastPageWithItems = max(lastPageWithItems, index) }

        switch mode {
        case .firstPage:
            actions += planAfterFirstPage(page)
        case .parallel(let pageCount):
            if index == pageCount - 1, let next = page.next { pendingNextLink = next }
            actions += fillWindow()
        default:
            actions += followSequentially(after: index, page)
        }
        return actions
    }

    /// Page `index` failed for good (retries are the fetcher's business).
    mutating func pageFailed(_ index: Int, _ error: SheafError) -> [Action] {
        guard !isFinished, inFlight.remove(index) != nil else { return [] }
        if mode == .pieces, index >= RangeSplitter.probeBase {
            split!.probeFailed(index, error)
            return cut == nil ? fillPieces() : settleCut()
        }
        // A 404 for a page the total promised may mean the list is shorter than it said. Which
        // it is shows once the pages in flight are in (nothing more is requested): 404s only at
        // the tail are the real end (reported as incomplete, every item kept); a 404 before a
        // page with items is a hole: a failure.
        if case .parallel = mode, index > 0, error.code == .http, error.httpStatus == 404, cut == nil {
            missingPages.append(index)
            if firstMissingError == nil { firstMissingError = error }
            return fillWindow()
        }
        // A page past the end that could not be had changes nothing (but an empty one, or a 404).
        if mode == .speculative, walksPageNumbers, let end = endIndex, index >= end, error.httpStatus != 404 {
            return fillWindow()
        }
        // Without a next signal, a 404 while walking page numbers is how some servers end a list.
        if mode == .speculative, walksPageNumbers, error.code == .http, error.httpStatus == 404 {
            return speculativePageArrived(index, .empty, notFound: error)
        }
        return fail(index: index, error)
    }

    /// Page `index`, asked for ahead of page one, is asked for again only if page one's plan
    /// needs it (it came back too big for what a page ahead may hold).
    mutating func forgetAhead(_ index: Int) {
        guard mode == .firstPage, aheadURLs.removeValue(forKey: index) != nil else { return }
        inFlight.remove(index)
        if aheadURLs.isEmpty { nextIndex = 1 } // page one's plan starts after it, as with pages ahead
    }

    /// Page `index` could not be asked for (or asked again) within a budget of the caller's: the
    /// list stops there once the pages before it are in.
    mutating func pageStopped(_ index: Int, _ reason: StopReason) -> [Action] {
        guard !isFinished, inFlight.remove(index) != nil else { return [] }
        return settle(cutting: index, .stopped(index: index, reason: reason))
    }

    /// A load-more list lets pages below `gate` go: what waited at the old gate is fetched.
    mutating func raiseGate(to gate: Int) -> [Action] {
        guard !isFinished, let current = pageGate, gate > current else { return [] }
        pageGate = gate
        if let waiting = gatedLink {
            gatedLink = nil
            return launchGuarded(waiting.url, index: waiting.index)
        }
        return mode == .firstPage ? [] : fillWindow()
    }

    /// Stops planning (the caller stopped, cancelled or hit its item limit).
    mutating func stop() -> [Action] {
        guard !isFinished else { return [] }
        isFinished = true
        let abandoned = inFlight.sorted()
        inFlight.removeAll()
        return abandoned.isEmpty ? [] : [.cancel(abandoned)]
    }

    // MARK: Plans

    /// Plans the list from page one. Pages asked for ahead of it stand where the plan asks for
    /// the same URL (their query in any order) at the same place; the others are abandoned
    /// (a plan on another page size, a list shorter than the window, a walk by next link).
    private mutating func planAfterFirstPage(_ page: Page) -> [Action] {
        guard !aheadURLs.isEmpty else { return planFromFirstPage(page) }
        let ahead = aheadURLs
        aheadURLs = [:]
        inFlight.subtract(ahead.keys)
        // Pages already asked for are kept though the window shrank meanwhile (a refusal): asking
        // for them again would cost a request each.
        let window = self.window
        self.window = max(window, ahead.count)
        defer { self.window = window }
        nextIndex = 1
        var kept = Set<Int>()
        let planned = planFromFirstPage(page).filter { action in
            guard case .fetch(let index, let url) = action, let sent = ahead[index], URLText.sameResource(sent, url) else {
                return true
            }
            kept.insert(index)
            return false
        }
        let abandoned = Set(ahead.keys).subtracting(kept).sorted()
        return (abandoned.isEmpty ? [] : [.cancel(abandoned)]) + planned
    }

    private mutating func planFromFirstPage(_ page: Page) -> [Action] {
        servedPageSize = page.items.count
        expectedTotal = page.total
        if paging == .single { return finishIfIdle() }
        if case .offset = paging, servedPageSize > 0 { step = servedPageSize }
        if let next = page.next, let number = position(of: next), number == position(forIndex: 1) {
            template = next // page k's URL keeps whatever the server put in its own next link
        }
        guard step != nil else {
            // A resumed run starts inside the list: its page one's walk may end where the list does not.
            if let rangeFilter, cut == nil, let resumed = Optional(template != rangeFilter.template),
               resumed || page.more != false || page.next != nil {
                let (splitter, reason) = RangeSplitter.start(filter: rangeFilter.filter, template: rangeFilter.template,
                                                             sizeParameter: paging.size?.parameter, pieceTarget: rangeFilter.pieceTarget,
                                                             pageOne: page, resumed: resumed)
                unsplitReason = reason
                if let splitter {
                    split = splitter
                    mode = .pieces
                    if let next = page.next { fetchedURLs.insert(next.hashValue) }
                    let next = page.more == false ? nil : page.next
                    let jump: [Action] = next == nil ? [.jump(after: 0, to: split!.firstIndex(after: 0))] : []
                    return jump + launchProbes(split!.begin(nextOfPageOne: next)) + fillPieces()
                }
            }
            return followSequentially(after: 0, page)
        }
        guard let pageCount = pageCount(of: page) else {
            return planSpeculation(after: page, requestedSize: paging.size?.value)
        }
        if pageCount <= 1 || servedPageSize == 0 {
            // Nothing more to fetch (or nothing fetchable: page one is empty though the total is
            // not zero — the end of the list reports that disagreement).
            if let next = page.next, servedPageSize > 0 {
                mode = .sequential
                return followNextLink(next, index: 1)
            }
            return finishIfIdle()
        }
        guard pageCount <= maxPages else {
            let why = page.total.map { "total \($0), \(servedPageSize) per page" } ?? "as the server reports"
            return fail(index: 1, SheafError(.pageLimit,
                "the list needs \(pageCount) pages (\(why)), more than the page cap of \(maxPages)"))
        }
        mode = .parallel(pageCount: pageCount)
        return fillWindow()
    }

    /// Without a total, pages are fetched by number a window ahead when page two is known to
    /// exist, or may exist: page one names page two by its number, or there is no next signal
    /// at all and page one is not short.
    private mutating func planSpeculation(after page: Page, requestedSize: Int?) -> [Action] {
        guard servedPageSize > 0 else { return followSequentially(after: 0, page) }
        if walksPageNumbers {
            if let requestedSize, servedPageSize < requestedSize { return finishIfIdle() }
        } else if let next = page.next {
            guard position(of: next) == position(forIndex: 1) else { return followSequentially(after: 0, page) }
        } else if page.more != true {
            return finishIfIdle()
        }
        mode = .speculative
        checkPageCap(after: 0)
        return cut == nil ? fillWindow() : settleCut()
    }

    /// Page `index` of a speculative plan arrived (or, walking page numbers, answered 404).
    private mutating func speculativePageArrived(_ index: Int, _ page: Page, notFound: SheafError? = nil) -> [Action] {
        if walksPageNumbers, let end = endIndex, index >= end {
            // A page past a short or empty last page, checked rather than abandoned, so that the
            // outcome never depends on which arrived first: it must be empty too.
            if !page.items.isEmpty {
                return fail(index: end, SheafError(.badPage,
                    "page \(index + 1) has items although page \(end) ended the list (short or empty)", url: page.url))
            }
            return fillWindow()
        }
        if !page.items.isEmpty { lastPageWithItems = max(lastPageWithItems, index) }
        var isLast = true
        var handOver: String?    // a next link that leaves the numbered pages: the walk goes on from it
        var loop: SheafError?
        if walksPageNumbers {
            if page.items.isEmpty, lastPageWithItems > index {
                // An empty page (or a 404) before one with items is a hole, not the end.
                return fail(index: index, notFound ?? SheafError(.badPage,
                    "page \(index + 1) is empty but page \(lastPageWithItems + 1) has items", url: page.next))
            }
            isLast = page.items.count < servedPageSize
            if isLast, lastPageWithItems > index {
                return fail(index: index + 1, SheafError(.badPage,
                    "page \(index + 1) is short but page \(lastPageWithItems + 1) has items", url: page.url))
            }
        } else if let next = page.next {
            let number = position(of: next)
            if let number, number == position(forIndex: index + 1) {
                isLast = false
            } else if let number, let current = position(forIndex: index), number <= current {
                loop = SheafError(.loop, "the next link of page \(index + 1) names page \(number) again: \(next)", url: next)
            } else {
                handOver = next
            }
        } else if page.more == true {
            isLast = false // has_more without a link: the numbers go on
        }
        let accept: Action = notFound == nil ? .accept(index: index) : .acceptEmpty(index: index)
        var actions: [Action]
        if isLast {
            // Dropped before page `index` is added, so nothing past it reaches the prefix.
            actions = endSpeculation(after: index) + [accept]
            continuation = handOver
            if let loop { noteCut(index: index + 1, .failed(index: index + 1, error: loop)) }
        } else {
            actions = [accept]
            checkPageCap(after: index)
        }
        return actions + (cut == nil ? fillWindow() : settleCut())
    }

    /// Page `index` is the last of the numbered pages: drop what lies after it, and abandon the
    /// pages in flight after it, unless the end was found by a short or empty page: those are
    /// awaited and must be empty.
    private mutating func endSpeculation(after index: Int) -> [Action] {
        endIndex = index + 1
        continuation = nil
        if let cut, cut.index > index { self.cut = nil }
        if walksPageNumbers { return [.discard(after: index)] }
        let later = inFlight.filter { $0 > index }.sorted()
        inFlight.subtract(later)
        return (later.isEmpty ? [] : [.cancel(later)]) + [.discard(after: index)]
    }

    /// Page `index` says there is more: past the page cap, that is a failure.
    private mutating func checkPageCap(after index: Int) {
        guard index + 1 >= maxPages else { return }
        let error = SheafError(.pageLimit, "the list has more than the page cap of \(maxPages) pages")
        noteCut(index: index + 1, .failed(index: index + 1, error: error))
    }

    private mutating func fillWindow() -> [Action] {
        switch mode {
        case .parallel(let pageCount):
            // After a 404 nothing past the page after it is asked for: that page (already in
            // flight in a full window, asked for now in a small one) and those in flight tell
            // whether it is a hole (a later page has items) or the real end, shorter than the total.
            let limit = missingPages.min().map { min($0 + 2, pageCount) } ?? pageCount
            let actions = launchNumberedPages(below: limit)
            guard cut == nil, inFlight.isEmpty, nextIndex >= limit else { return actions }
            if let next = pendingNextLink, missingPages.isEmpty {
                // The last planned page still names a next page: the list grew; walk on.
                pendingNextLink = nil
                mode = .sequential
                return actions + followNextLink(next, index: nextIndex)
            }
            return actions + finishIfIdle()
        case .speculative:
            let actions = launchNumberedPages(below: min(endIndex ?? maxPages, maxPages))
            // Every page before the end is in: finish, or walk on from where the numbers stopped.
            guard cut == nil, inFlight.isEmpty, let end = endIndex else { return actions }
            if let next = continuation {
                continuation = nil
                mode = .sequential
                nextIndex = end
                return actions + followNextLink(next, index: end)
            }
            return actions + finishIfIdle()
        case .pieces:
            return fillPieces()
        case .firstPage, .sequential:
            return []
        }
    }

    /// Requests numbered pages below `limit` while the window has room. Pages after a slow one
    /// are held until it arrives; the horizon bounds how many (and so the memory a stuck page
    /// can cost) to twice the window. Numbered pages are distinct by construction: not
    /// remembered, so a long stream keeps no per-page state. A walk that loops back into them
    /// is still caught when it reaches a remembered URL again (or the page cap).
    private mutating func launchNumberedPages(below limit: Int) -> [Action] {
        var actions: [Action] = []
        while cut == nil, inFlight.count < window, nextIndex < limit,
              nextIndex < (inFlight.min() ?? nextIndex) + 2 * window {
            if let stop = budgetStop(at: nextIndex) { return actions + stop }
            if isGated(nextIndex) { break }
            guard let url = url(forIndex: nextIndex) else {
                return actions + fail(index: nextIndex, SheafError(.badPage, "cannot build the URL of page \(nextIndex + 1) from \(template)"))
            }
            actions += launch(url, remembered: false)
        }
        return actions
    }

    private mutating func followSequentially(after index: Int, _ page: Page) -> [Action] {
        mode = .sequential
        if let next = page.next { return followNextLink(next, index: index + 1) }
        if page.more == true, paging != .single {
            return fail(index: index + 1, SheafError(.badPage,
                "page \(index + 1) says more pages follow but names no next page or cursor", url: page.url))
        }
        return finishIfIdle()
    }

    private mutating func followNextLink(_ url: String, index: Int) -> [Action] {
        if fetchedURLs.contains(url.hashValue) {
            return fail(index: index, SheafError(.loop, "the next link of page \(index) repeats a URL already fetched: \(url)", url: url))
        }
        return launchGuarded(url, index: index)
    }

    private mutating func launchGuarded(_ url: String, index: Int) -> [Action] {
        if let stop = budgetStop(at: index) { return stop }
        if isGated(index) {
            gatedLink = (url, index)
            return []
        }
        guard index < maxPages else {
            return fail(index: index, SheafError(.pageLimit, "the list has more than the page cap of \(maxPages) pages", url: url))
        }
        return launch(url)
    }

    /// Page `index` is needed but past the caller's page budget: the list stops there once the
    /// pages before it are in.
    private mutating func budgetStop(at index: Int) -> [Action]? {
        guard let pageBudget, index >= pageBudget else { return nil }
        return settle(cutting: index, .stopped(index: index, reason: .pageBudget))
    }

    /// Whether page `index` waits at a load-more list's gate.
    private func isGated(_ index: Int) -> Bool {
        pageGate.map { index >= $0 } ?? false
    }

    private mutating func launch(_ url: String, remembered: Bool = true) -> [Action] {
        let index = nextIndex
        nextIndex += 1
        inFlight.insert(index)
        if remembered { fetchedURLs.insert(url.hashValue) }
        return [.fetch(index: index, url: url)]
    }

    private mutating func fail(index: Int, _ error: SheafError) -> [Action] {
        settle(cutting: index, .failed(index: index, error: error))
    }

    /// Keeps the earliest page the list cannot go past (a failure, or a budget's stop);
    /// `settleCut` acts on it.
    private mutating func noteCut(index: Int, _ ending: Ending) {
        if cut == nil || index < cut!.index { cut = (index, ending) }
    }

    private mutating func settle(cutting index: Int, _ ending: Ending) -> [Action] {
        noteCut(index: index, ending)
        return settleCut()
    }

    /// After a cut at page k: abandon pages after k, wait for pages before k, then finish.
    private mutating func settleCut() -> [Action] {
        guard let cut else { return [] }
        let later = inFlight.filter { $0 > cut.index }.sorted()
        inFlight.subtract(later)
        var actions: [Action] = later.isEmpty ? [] : [.cancel(later)]
        if inFlight.isEmpty {
            isFinished = true
            actions.append(.finish(cut.ending))
        }
        return actions
    }

    private mutating func finishIfIdle() -> [Action] {
        guard inFlight.isEmpty else { return [] }
        missingPages.sort()
        if let firstMissing = missingPages.first, let error = firstMissingError {
            if lastPageWithItems > firstMissing {
                return fail(index: firstMissing, error)
            }
            isFinished = true
            return missingPages.map { .acceptEmpty(index: $0) }
                + [.finish(.allPages(expectedTotal: expectedTotal, missingPages: missingPages))]
        }
        isFinished = true
        return [.finish(.allPages(expectedTotal: expectedTotal, missingPages: missingPages))]
    }

    // MARK: Pieces (a cursor list split by its range filter)

    /// Pages of the list sent in pieces, page one included: what the page cap and budget count
    /// (probes are requests, not pages).
    private var piecePagesSent = 1

    /// The probes `RangeSplitter.begin` sends, as fetches in flight.
    private mutating func launchProbes(_ actions: [Action]) -> [Action] {
        for case .fetch(let index, _) in actions { inFlight.insert(index) }
        return actions
    }

    private mutating func piecePageArrived(_ index: Int, _ page: Page) -> [Action] {
        if index >= RangeSplitter.probeBase {
            split!.probeArrived(index, page)
            return cut == nil ? fillPieces() : settleCut()
        }
        if let cut, index > cut.index { return settleCut() }
        // The room the window will have once this answer is in that no piece asks for.
        let idle = max(0, window - (inFlight.count - split!.probesOut.count) - split!.ready - 1)
        switch split!.pageArrived(index, page, idle: idle) {
        case .failure(let error):
            return fail(index: index, error)
        case .accept(let items, let endsPiece):
            var actions: [Action] = []
            if endsPiece { actions.append(.jump(after: index, to: split!.firstIndex(after: index / RangeSplitter.piecePages))) }
            actions.append(.acceptPart(index: index, items: items, endsPiece: endsPiece))
            if cut != nil { return actions + settleCut() }
            if !endsPiece, let next = page.next {
                guard fetchedURLs.insert(next.hashValue).inserted else {
                    return actions + fail(index: index + 1, SheafError(.loop, "the next link of \(page.url) repeats a URL already fetched: \(next)", url: next))
                }
            }
            return actions + fillPieces()
        }
    }

    /// Sends the next page of the earliest pieces that have one while the window has room
    /// (probes aside); finishes once every piece is walked.
    private mutating func fillPieces() -> [Action] {
        var actions: [Action] = []
        let probes = split!.probesOut.count
        while cut == nil, inFlight.count - probes < window, let (index, url) = split!.nextToSend() {
            if let pageBudget, piecePagesSent >= pageBudget {
                // The probes out are let in first: the plan they make is what the token (and a
                // plan of partitions) goes on with.
                guard probes == 0 else { return actions }
                return actions + settle(cutting: index, .stopped(index: index, reason: .pageBudget))
            }
            // A load-more list's gate counts the pages sent: the earliest piece takes the room
            // each of its pages frees as it is handed out, so the prefix always moves.
            if let pageGate, piecePagesSent >= pageGate { break }
            guard piecePagesSent < maxPages else {
                return actions + fail(index: index, SheafError(.pageLimit, "the list has more than the page cap of \(maxPages) pages", url: url))
            }
            piecePagesSent += 1
            split!.sent(index)
            inFlight.insert(index)
            actions.append(.fetch(index: index, url: url))
        }
        if cut == nil, inFlight.isEmpty, split!.isComplete { return actions + finishIfIdle() }
        return actions
    }

    /// Where a split list goes on after page `index` (`page` as it arrived, `kept` its items the
    /// piece took): see `RangeSplitter.continuation`.
    func pieceContinuation(after index: Int, _ page: Page, kept: Range<Int>) -> (url: String?, skip: Int) {
        split?.continuation(after: index, page, kept: kept) ?? (nil, 0)
    }

    // MARK: Page URLs

    /// The number of pages from page 0 of this run on: from the total and the served page size,
    /// or as the page reports it.
    private func pageCount(of page: Page) -> Int? {
        let before = resumedPast()
        if let total = page.total, servedPageSize > 0 {
            // No overflow for any total the server sends.
            let remaining = total - min(before.items, total)
            return remaining / servedPageSize + (remaining % servedPageSize == 0 ? 0 : 1)
        }
        if let count = page.pageCount { return count - min(before.pages, count) }
        if let last = page.lastPosition, let first = position(forIndex: 0), let step, last >= first {
            return (last - first) / step + 1
        }
        return nil
    }

    /// The pages and items a resumed list's earlier runs went past, as the addressing counts
    /// them (0 for a list that starts at its start).
    private func resumedPast() -> (pages: Int, items: Int) {
        let pageSize = resumedPageSize.flatMap { $0 > 0 ? $0 : nil } ?? servedPageSize
        guard let origin, let first = paging.first, first > origin, pageSize > 0 else { return (0, 0) }
        let distance = first - origin // both >= 0: no overflow
        if case .offset = paging { return (distance / pageSize, distance) }
        let (items, overflow) = distance.multipliedReportingOverflow(by: pageSize)
        return (distance, overflow ? Int.max : items)
    }

    /// The URL of the page after page `index` (accepted as `page`), as the plan knows it now:
    /// where the list goes on after it; nil when the list ends there.
    func continuation(after index: Int, _ page: Page) -> String? {
        guard page.more != false, paging != .single else { return nil }
        switch mode {
        case .parallel(let pageCount) where index + 1 < pageCount:
            return url(forIndex: index + 1)
        case .speculative where endIndex.map { index + 1 < $0 } ?? true:
            return url(forIndex: index + 1)
        case .speculative where walksPageNumbers:
            return nil
        default:
            return page.next
        }
    }

    /// The addressing value in `url`: its page number or offset.
    private func position(of url: String) -> Int? {
        guard let parameter = paging.parameter, step != nil || paging.isNumbered else { return nil }
        return URLText.queryValue(url, parameter).flatMap { Int($0) }
    }

    /// The addressing value of page `index`; nil past Int's range.
    private func position(forIndex index: Int) -> Int? {
        guard let first = paging.first, let step else { return nil }
        let (offset, overflow1) = index.multipliedReportingOverflow(by: step)
        let (value, overflow2) = first.addingReportingOverflow(offset)
        return overflow1 || overflow2 ? nil : value
    }

    private func url(forIndex index: Int) -> String? {
        guard let parameter = paging.parameter, let position = position(forIndex: index) else { return nil }
        return URLText.settingQuery(template, parameter, to: String(position))
    }
}
