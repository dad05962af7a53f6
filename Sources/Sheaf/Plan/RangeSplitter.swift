/// Plans a cursor list with a range filter as pieces of the range walked side by side: a pure
/// state machine, driven by `PagePlanner` once page one is in (its `split` plan).
///
/// Values are whole units of the field (`RangeValue`) turned into keys that fall along the list
/// (a newest-first list's keys are its values, an oldest-first list's their negation), so a piece
/// is a half-open key range `[lo, hi)` and the list is the pieces in descending key order:
///
/// - **piece 0** is page one's own walk, kept to keys at or above the last key page one shows
///   (`x`): the run's top is fixed by page one, since a walk goes away from what is added later;
/// - **probes** (one round trip, a page of one item each) ask for the bands below `x` at
///   distances growing fourfold, and prove that the server applies the filter: an item outside
///   the band asked for, or a probe that fails, and the list is walked as one piece (piece 0 then
///   goes on unbounded), said in the plan;
/// - **pieces 1...n** cut `[bottom, x)` into equal ranges, where `bottom` is the deepest band
///   that holds items (the last piece is open below when the deepest probe still found some).
///
/// Each piece is walked by the list's own cursor or next link from its first request, which
/// carries its bounds; a page is trimmed to the piece's range (the items of a filter the server
/// ignored belong to another piece), and the piece ends at its first item below `lo`, or where
/// its walk ends. Pieces meet exactly, so a value shared by many items (a burst in one second)
/// lies in one piece, walked by the cursor: each item once, in the list's order.
///
/// Page `k` of piece `p` is index `p << 32 | k`; probes are indices from `probeBase` on.
struct RangeSplitter {
    typealias Action = PagePlanner.Action

    struct Piece: Equatable {
        /// Keys from `lo` (in) to `hi` (out); nil: that end open.
        var lo: Int?
        var hi: Int?
        /// The URL of the piece's next page; nil before the piece is planned or after its end.
        var next: String?
        /// The URL of its first page.
        var first: String?
        var pages = 0
        var inFlight = false
        var done = false
        /// The last key the piece delivered: the next page's must not be above it.
        var lastKey: Int?
    }

    enum Phase: Equatable {
        /// Piece 0 walks while the probes are out (their indices).
        case probing(Set<Int>)
        /// The pieces are planned.
        case walking
    }

    static let probeBase = 1 << 62
    static let piecePages = 1 << 32
    /// Bands probed below page one's last key, each four times as deep as the one before (the
    /// twelfth reaches 4^11, four million times what page one spans; below it, one open band).
    /// Fourfold, not more: the deepest band that holds items is cut with the rest, and the part of
    /// it below the list's end is pieces that cost a request each and hold nothing.
    static let bands = 12
    static let bandGrowth = 4

    let filter: RangeFilter
    let kind: RangeValue.Kind
    /// The list's own first URL (its query and bounds, no cursor): pieces and probes are built on it.
    let template: String
    let sizeParameter: String?
    /// The pieces to plan: several per request the window may have in flight, so that a
    /// piece that proves long does not leave the window empty at the end.
    let pieceTarget: Int
    /// The key the caller's own query bounds the far end to (inclusive), if it does.
    let farKey: Int?
    /// Page one's last key: piece 0 keeps what is at or above it.
    let x: Int
    /// The keys page one spans (at least 1): a page's worth of the range, where it is as dense.
    let pageSpan: Int
    /// Page one's first key: the run's top (what is added later is above it).
    let top: Int
    /// Every piece by its number (what its pages' indices carry), in the order they were made.
    private(set) var pieces: [Piece]
    /// The pieces' numbers in the list's order: a piece split as it goes has the new pieces
    /// after it.
    private(set) var order: [Int] = [0]
    private(set) var phase: Phase
    /// The bands' lower ends (`bandBottoms[i]` for band `i + 1`; band `i + 1` is below band `i`),
    /// and whether each probe found an item. The last band may be open below (nil).
    private var bandBottoms: [Int?] = []
    private var bandFound: [Bool] = []
    /// Why the list is walked as one piece, once it is.
    private(set) var oneWalkReason: String?
    /// Where piece 0 was cut short by its lower end: the page its walk goes on from, for a piece
    /// that has to take the rest of that walk (the list walked as one piece).
    private var chainRest: String?

    /// Nil, with the reason, when page one cannot start a split: an item without a value of the
    /// field's kind, items out of the list's order, or nothing after it. A resumed run's page one
    /// (a page inside the list, `resumed`) starts one even where its own walk ends there: the
    /// list goes on below it.
    static func start(filter: RangeFilter, template: String, sizeParameter: String?, pieceTarget: Int,
                      pageOne page: Page, resumed: Bool) -> (splitter: RangeSplitter?, reason: String?) {
        guard resumed || (page.next != nil && !page.items.isEmpty) else { return (nil, nil) }
        let sample = page.rangeValues.first.flatMap { $0 }
        guard let kind = filter.kind ?? sample.flatMap(RangeValue.kind(of:)) else {
            return (nil, page.items.isEmpty ? nil
                         : "the first item has no \(filter.field) a split can read (a whole number, a decimal or an RFC 3339 time)")
        }
        var keys: [Int] = []
        for (position, value) in page.rangeValues.enumerated() {
            guard let value, let read = RangeValue(value, kind: kind) else {
                return (nil, "item \(position) of page one has no \(kind.rawValue) at \(filter.field)")
            }
            let key = filter.order == .newestFirst ? read.units : -read.units
            if let previous = keys.last, key > previous {
                return (nil, "page one is not ordered by \(filter.field) \(filter.order.words)")
            }
            keys.append(key)
        }
        // An empty page inside the list: what is below its own upper end is still to come.
        let near = filter.order == .newestFirst ? filter.upper : filter.lower
        guard let x = keys.last ?? URLText.queryValue(page.url, near.parameter).flatMap({ text -> Int? in
            guard let value = RangeValue(.string(text), kind: kind) else { return nil }
            let step = near.inclusive ? 1 : 0 // the key just past the values the page was asked for
            return filter.order == .newestFirst ? value.units.addingReportingOverflow(step).partialValue
                                                : -(value.units.subtractingReportingOverflow(step).partialValue)
        }) else { return (nil, nil) }
        var splitter = RangeSplitter(filter: filter, kind: kind, template: template, sizeParameter: sizeParameter,
                                     pieceTarget: max(1, pieceTarget), x: x, top: keys.first ?? x)
        splitter.pieces[0].lastKey = keys.last
        return (splitter, nil)
    }

    private init(filter: RangeFilter, kind: RangeValue.Kind, template: String, sizeParameter: String?, pieceTarget: Int,
                 x: Int, top: Int) {
        self.filter = filter
        self.kind = kind
        self.template = template
        self.sizeParameter = sizeParameter
        self.pieceTarget = pieceTarget
        self.x = x
        // The caller's own bound on the far end: the lower parameter of a newest-first list, the
        // upper of an oldest-first one.
        let farBound = filter.order == .newestFirst ? filter.lower : filter.upper
        var farKey: Int?
        if let text = URLText.queryValue(template, farBound.parameter), let value = RangeValue(.string(text), kind: kind) {
            let step = farBound.inclusive ? 0 : 1
            farKey = filter.order == .newestFirst ? value.units.addingReportingOverflow(step).partialValue
                                                  : -(value.units.subtractingReportingOverflow(step).partialValue)
        }
        self.farKey = farKey
        pieces = [Piece(lo: x, hi: nil, pages: 1)]
        phase = .probing([])
        // The bands: [x - s, x), [x - 4s, x - s), ... where s is what page one spans, down to
        // the caller's bound; the last open below when there is none.
        let span = max(1, top.subtractingReportingOverflow(x).overflow ? 1 : top - x)
        pageSpan = span
        self.top = top
        var upper = x
        var depth = span
        var reachedFarEnd = farKey.map { $0 >= x } ?? false
        // The deepest key a parameter can say (a time's year 0001 or 9999): below it, open.
        let floor = kind.writable.map { filter.order == .newestFirst ? $0.lowerBound : -$0.upperBound }
        for _ in 0..<Self.bands where !reachedFarEnd {
            let (below, overflow) = x.subtractingReportingOverflow(depth)
            if overflow || floor.map({ below <= $0 }) == true { break }
            var bottom = below
            if let farKey, bottom <= farKey {
                bottom = farKey
                reachedFarEnd = true
            }
            guard bottom < upper else { break }
            bandBottoms.append(bottom)
            upper = bottom
            let (deeper, grew) = depth.multipliedReportingOverflow(by: Self.bandGrowth)
            if grew { break }
            depth = deeper
        }
        if !reachedFarEnd {
            if let farKey {
                if farKey < upper { bandBottoms.append(farKey) }
            } else {
                bandBottoms.append(nil)
            }
        }
        bandFound = Array(repeating: false, count: bandBottoms.count)
    }

    // MARK: Events

    /// The probes: what page one's plan sends besides piece 0's next page, `nextOfPageOne`
    /// (nil: page one ends piece 0).
    mutating func begin(nextOfPageOne: String?) -> [Action] {
        pieces[0].next = nextOfPageOne
        pieces[0].done = nextOfPageOne == nil
        var actions: [Action] = []
        var out = Set<Int>()
        for band in bandBottoms.indices {
            guard let url = probeURL(band) else {
                walkAsOne("cannot write the bounds of \(filter.field) into the URL")
                return []
            }
            out.insert(Self.probeBase + band)
            actions.append(.fetch(index: Self.probeBase + band, url: url))
        }
        phase = out.isEmpty ? .walking : .probing(out)
        if out.isEmpty { planPieces() }
        return actions
    }

    /// A probe's answer: whether its band holds items, and whether the server kept to the band
    /// (when not, the list is walked as one piece from now on).
    mutating func probeArrived(_ index: Int, _ page: Page) {
        guard case .probing(var out) = phase, out.remove(index) != nil else { return }
        let band = index - Self.probeBase
        if let value = page.rangeValues.first {
            guard let value, let read = RangeValue(value, kind: kind) else {
                return walkAsOne("a probe's item has no \(kind.rawValue) at \(filter.field)")
            }
            let key = key(of: read)
            let top = band == 0 ? x : bandBottoms[band - 1]!
            if key >= top || (bandBottoms[band].map { key < $0 } ?? false) {
                return walkAsOne("the server ignores the range filter (\(filter.lower.parameter), \(filter.upper.parameter)): "
                                    + "a request for a range answered \(value) outside it")
            }
            bandFound[band] = true
        } else if !page.items.isEmpty {
            return walkAsOne("a probe's item has no \(filter.field)")
        }
        phase = .probing(out)
        if out.isEmpty {
            phase = .walking
            planPieces()
        }
    }

    mutating func probeFailed(_ index: Int, _ error: SheafError) {
        guard case .probing(let out) = phase, out.contains(index) else { return }
        walkAsOne("a request for a range failed (\(error.message))")
    }

    /// The list is walked as one piece: what is out is ignored, piece 0 goes on unbounded.
    private mutating func walkAsOne(_ reason: String) {
        oneWalkReason = reason
        phase = .walking
        pieces = Array(pieces.prefix(1))
        order = [0]
        if pieces[0].done, let rest = chainRest {
            // Piece 0 stopped at its lower end: the rest of its walk is a piece of its own.
            pieces.append(Piece(lo: nil, hi: x, next: rest, first: rest))
            order.append(1)
        } else {
            pieces[0].lo = nil
        }
    }

    /// Plans pieces 1...n from what the probes found.
    private mutating func planPieces() {
        guard let deepest = bandFound.lastIndex(of: true) else {
            // Nothing below page one's last key: piece 0 is the list, but what its walk finds
            // below that key (it stopped there) is walked on, not lost.
            if pieces[0].done, let rest = chainRest {
                pieces.append(Piece(lo: nil, hi: x, next: rest, first: rest))
                order.append(1)
            } else {
                pieces[0].lo = nil
            }
            return
        }
        let bottom = bandBottoms[deepest]
        let base = bottom ?? (deepest > 0 ? bandBottoms[deepest - 1]! : x)
        let width = x - base // > 0: every band is below x and non-empty
        // Pieces of two pages or so where the range is as dense as page one (a piece's last page
        // is short: smaller pieces cost requests), within the target.
        let pages = width / pageSpan + 1
        let count = max(0, min(pieceTarget - (bottom == nil ? 1 : 0), width, max(1, pages / 2)))
        var planned = cuts(from: base, to: x, count: count)
        if bottom == nil { planned.append(Piece(lo: farKey, hi: planned.last?.lo ?? x)) }
        guard insert(planned, after: 0) else {
            pieces.removeSubrange(1...)
            order = [0]
            walkAsOne("cannot write the bounds of a piece into the URL")
            return
        }
    }

    /// `[low, high)` cut into `count` pieces of equal width (the first ones a key wider), highest first.
    private func cuts(from low: Int, to high: Int, count: Int) -> [Piece] {
        guard count > 0, high > low else { return [] }
        let width = high - low
        let step = width / count, remainder = width % count
        var out: [Piece] = []
        var upper = high
        for k in 1...count {
            let lower = high - k * step - min(k, remainder)
            out.append(Piece(lo: lower, hi: upper))
            upper = lower
        }
        return out
    }

    /// Adds `new` pieces, with their first URLs, right after piece `number` in the list's order;
    /// false (nothing added) when a bound cannot be written.
    private mutating func insert(_ new: [Piece], after number: Int) -> Bool {
        var made: [Piece] = []
        for var piece in new {
            guard let url = rangeURL(piece) else { return false }
            piece.first = url
            piece.next = url
            made.append(piece)
        }
        let place = (order.firstIndex(of: number) ?? order.count - 1) + 1
        order.insert(contentsOf: made.indices.map { pieces.count + $0 }, at: place)
        pieces += made
        return true
    }

    /// Piece `number`, still walking with its last page spanning `keysPerPage` keys down to
    /// `lastKey`, hands what is below its next page to new pieces after it when the window has
    /// `idle` requests nobody asks for: a piece that proved longer than the plan thought does
    /// not walk alone at the end.
    private mutating func resplit(_ number: Int, lastKey: Int, keysPerPage: Int, idle: Int) {
        guard phase == .walking, number != 0, idle > 0, let lo = pieces[number].lo else { return }
        let keep = lastKey.subtractingReportingOverflow(max(1, keysPerPage))
        guard !keep.overflow, keep.partialValue > lo else { return }
        let rest = keep.partialValue - lo
        let count = min(idle, rest / max(1, keysPerPage))
        guard count >= 1, insert(cuts(from: lo, to: keep.partialValue, count: count), after: number) else { return }
        pieces[number].lo = keep.partialValue
        resplits += 1
    }

    /// How the arrival of page `index` of a piece changes it: the part of the page in the piece,
    /// whether the piece ends there, or a failure.
    enum Arrival: Equatable {
        case accept(items: Range<Int>, endsPiece: Bool)
        case failure(SheafError)
    }

    /// - Parameter idle: requests the window has room for that no piece asks for (see `resplit`).
    mutating func pageArrived(_ index: Int, _ page: Page, idle: Int = 0) -> Arrival {
        let number = index / Self.piecePages
        guard number < pieces.count else { return .failure(SheafError(.badPage, "an answer for a piece the plan does not have")) }
        var piece = pieces[number]
        piece.inFlight = false
        defer { pieces[number] = piece }
        var keys: [Int] = []
        keys.reserveCapacity(page.items.count)
        for (position, value) in page.rangeValues.enumerated() {
            guard let value, let read = RangeValue(value, kind: kind) else {
                return .failure(SheafError(.badPage, "item \(position) of \(page.url) has no \(kind.rawValue) at \(filter.field): "
                                           + "a list split by it needs one on every item", url: page.url))
            }
            let key = key(of: read)
            if let previous = keys.last ?? piece.lastKey, key > previous {
                return .failure(SheafError(.badPage, "the items of \(page.url) are not ordered by \(filter.field) "
                                           + "\(filter.order.words) (item \(position) is \(value)): "
                                           + "a list split by it needs that order; describe it without the split", url: page.url))
            }
            keys.append(key)
        }
        guard page.rangeValues.count == page.items.count else {
            return .failure(SheafError(.badPage, "\(page.url): the items and their \(filter.field) do not match", url: page.url))
        }
        // Ordered by key, descending: what is above the piece is a head, what is below a tail.
        let start = piece.hi.map { hi in keys.firstIndex { $0 < hi } ?? keys.count } ?? 0
        let end = piece.lo.map { lo in keys.firstIndex { $0 < lo } ?? keys.count } ?? keys.count
        let cut = end < keys.count
        if let last = keys.last { piece.lastKey = last }
        if cut {
            if number == 0 { chainRest = page.url }
            piece.done = true
            piece.next = nil
        } else if page.items.isEmpty || page.more == false || page.next == nil {
            if page.more == true, page.next == nil {
                return .failure(SheafError(.badPage, "\(page.url) says more pages follow but names no next page or cursor", url: page.url))
            }
            piece.done = true
            piece.next = nil
        } else {
            piece.next = page.next
            if let first = keys.first, let last = keys.last {
                pieces[number] = piece
                resplit(number, lastKey: last, keysPerPage: first - last, idle: idle)
                piece.lo = pieces[number].lo
            }
        }
        return .accept(items: min(start, end)..<end, endsPiece: piece.done)
    }

    /// Marks page `index` of its piece as sent.
    mutating func sent(_ index: Int) {
        let number = index / Self.piecePages
        pieces[number].inFlight = true
        pieces[number].pages += 1
        pieces[number].next = nil
    }

    /// The earliest piece with a page to send and none in flight: its next page's index and URL.
    func nextToSend() -> (index: Int, url: String)? {
        for number in order {
            let piece = pieces[number]
            guard !piece.done, !piece.inFlight, let url = piece.next else { continue }
            return (number * Self.piecePages + piece.pages, url)
        }
        return nil
    }

    /// Pieces with a page to send and none in flight.
    var ready: Int { pieces.reduce(0) { $0 + (!$1.done && !$1.inFlight && $1.next != nil ? 1 : 0) } }

    /// Pieces split as they went (`resplit`).
    private(set) var resplits = 0

    /// Whether every piece is planned and walked to its end.
    var isComplete: Bool { phase == .walking && pieces.allSatisfy(\.done) }

    /// Whether a probe is out.
    var probesOut: Set<Int> {
        if case .probing(let out) = phase { return out }
        return []
    }

    /// The index the list goes on at after piece `number` ends: the next piece's first page (the
    /// next in the list's order; while the pieces are not planned, the first that will be).
    func firstIndex(after number: Int) -> Int {
        guard let place = order.firstIndex(of: number), place + 1 < order.count else { return pieces.count * Self.piecePages }
        return order[place + 1] * Self.piecePages
    }

    /// Where the list goes on after page `index` (accepted as `page`, its items `kept`): the next
    /// page of its piece, or the next piece's first; nil after the last piece's end. While the
    /// pieces are not planned yet, the end of piece 0 goes on at the page itself, past what it kept.
    func continuation(after index: Int, _ page: Page, kept: Range<Int>) -> (url: String?, skip: Int) {
        let number = index / Self.piecePages
        guard number < pieces.count else { return (nil, 0) }
        if !pieces[number].done { return (page.next, 0) }
        if let place = order.firstIndex(of: number), place + 1 < order.count { return (pieces[order[place + 1]].first, 0) }
        return phase == .walking ? (nil, 0) : (page.url, kept.upperBound)
    }

    /// What the plan is, in words (the description's "split_plan").
    var summary: String {
        if let oneWalkReason { return "walked as one piece: \(oneWalkReason)" }
        switch phase {
        case .probing: return "split on \(filter.field): probing the range"
        case .walking: return "split on \(filter.field) into \(pieces.count) pieces"
            + (resplits > 0 ? " (\(resplits) split again as they went)" : "")
        }
    }

    /// The list cut into up to `count` ranges of whole pieces, in the list's order, for
    /// partitions: each is `url` asking for its keys (the first bounded by page one's first key, so
    /// that what is added after the plan is in none). Nil while the pieces are not planned, or
    /// when the list is walked as one piece.
    func partitionURLs(count: Int, of url: String) -> [String]? {
        guard phase == .walking, oneWalkReason == nil, count >= 1 else { return nil }
        let parts = min(count, order.count)
        var urls: [String] = []
        for part in 0..<parts {
            let first = pieces[order[part * order.count / parts]], last = pieces[order[(part + 1) * order.count / parts - 1]]
            let hi = part == 0 ? top.addingReportingOverflow(1).partialValue : first.hi
            guard let bounded = bounded(url, lo: last.lo, hi: hi) else { return nil }
            urls.append(bounded)
        }
        return urls
    }

    /// A value's place along the list: its units, negated for an oldest-first list.
    private func key(of value: RangeValue) -> Int {
        filter.order == .newestFirst ? value.units : -value.units
    }

    // MARK: URLs

    /// The first URL of a piece: the template with the piece's bounds.
    private func rangeURL(_ piece: Piece) -> String? {
        bounded(template, lo: piece.lo, hi: piece.hi)
    }

    /// The URL of probe `band`: its band's bounds, one item.
    private func probeURL(_ band: Int) -> String? {
        let hi = band == 0 ? x : bandBottoms[band - 1]!
        guard var url = bounded(template, lo: bandBottoms[band] ?? farKey, hi: hi) else { return nil }
        if let sizeParameter { url = URLText.settingQuery(url, sizeParameter, to: "1") ?? url }
        return url
    }

    /// `url` asking for keys from `lo` (in) to `hi` (out), in the filter's parameters.
    private func bounded(_ url: String, lo: Int?, hi: Int?) -> String? {
        // Keys [lo, hi) are values [lo, hi - 1] newest first, [-(hi - 1), -lo] oldest first.
        let highestKey = hi.map { $0 - 1 }
        let range = filter.order == .newestFirst
            ? RangeFilter.ClosedValues(lowest: lo, highest: highestKey)
            : RangeFilter.ClosedValues(lowest: highestKey.map { -$0 }, highest: lo.map { -$0 })
        guard let values = filter.queryValues(range, kind: kind) else { return nil }
        var url = url
        for (parameter, value) in values {
            if let value {
                guard let set = URLText.settingQuery(url, parameter, to: value) else { return nil }
                url = set
            }
        }
        return url
    }
}
