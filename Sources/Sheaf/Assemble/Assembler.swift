#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Orders pages that finish out of order into one growing, de-duplicated prefix.
///
/// Pages are held until the gap before them fills; each contiguous advance becomes one
/// `SnapshotDelta`. Pure: no I/O, no threads.
struct Assembler {
    /// Whether to keep the whole prefix (for `prefixJSON` and fetch-all); off for pure streaming.
    let keepsItems: Bool
    /// Stop after this many items.
    let maxItems: Int?
    let deduplicates: Bool
    /// One delta per page rather than per advance (a load-more list hands out single pages).
    let deltaPerPage: Bool
    /// Items of page 0 to leave out: a resumed list delivered them before.
    let skipsOnFirstPage: Int
    /// Whether a delta carries its items (`json`, `itemEnds`); without a snapshot consumer
    /// (fetch-all) only its counts are read, and the items are copied once, into the prefix.
    let deltasCarryItems: Bool
    /// What items are held against below (`ListDescription.syncFloor`): the first item below a
    /// bound (at it, unless the bound names what it saw) ends the list; it and everything after it
    /// are left out.
    let floor: SyncFloor?
    /// The upper end of a poll's range: items past it are left out.
    let ceiling: SyncCeiling?
    /// Whether items carry a sync value whose greatest is recorded (`greatest`).
    let recordsSync: Bool

    private var pending: [Int: Page] = [:]
    private var nextIndex = 0
    /// Where the order goes on after a page that ends a piece of a split list (`jump`): the
    /// first page of the next piece, not the page after it.
    private var jumps: [Int: Int] = [:]
    private var jumped = false
    private var seen = Set<IdentityKey>()
    /// When items are not kept, the identities in the order they were seen, oldest dropped past
    /// `streamingIdentityLimit`: a stream's memory must not grow with the list.
    private var recent: [IdentityKey] = []
    private var oldest = 0
    /// How many identities a list that does not keep its items remembers for de-duplication
    /// (duplicates come from pages shifting while they are read, so they are near each other).
    static let streamingIdentityLimit = 100_000
    /// The kept prefix: its items as JSON array elements (comma-separated), in pieces, so it is
    /// never copied as it grows (a list's worth of bytes moved on each doubling). A page's items
    /// are a piece of its body when they lie there as one run (compact JSON), else a copy.
    private var prefix: [ArraySlice<UInt8>] = []
    /// Bytes in `prefix`.
    private var prefixCount = 0
    /// Items in the prefix, after de-duplication.
    private(set) var itemCount = 0
    /// Pages in the prefix.
    private(set) var pageCount = 0
    /// The index of the prefix's last page (-1 before any): `pageCount - 1` but where a split
    /// list's pieces number their pages apart.
    private(set) var lastIndex = -1
    /// Of each delta the last `add` returned, the index of the prefix's last page through it (kept
    /// here, not in the delta: a public value whose size a multi-payload enum's layout depends on).
    private(set) var deltaLastPages: [Int] = []
    /// Whether `maxItems` was reached (the prefix is then exactly that long).
    private(set) var reachedLimit = false
    /// Where `maxItems` cut a page short: the page, and how many of its items were taken or
    /// skipped as duplicates (nil when the limit fell on the last item of a page).
    private(set) var cut: (index: Int, consumed: Int)?
    /// Whether an item at or below `bound` was reached (nothing from it on is added).
    private(set) var reachedBound = false
    /// The greatest sync value among the items added so far, and the identities at it.
    private(set) var greatest: SyncMark?
    /// A page whose items repeat the page before it byte for byte (a server that ignores the
    /// page parameter serves page one again and again); nothing from it or after it is added.
    private(set) var repeatedPage: Int?
    /// The last page added with items, to compare the next one with.
    private var lastPage: (index: Int, page: Page)?

    init(keepsItems: Bool, maxItems: Int?, deduplicates: Bool, skipsOnFirstPage: Int = 0, deltaPerPage: Bool = false,
         deltasCarryItems: Bool = true, floor: SyncFloor? = nil, ceiling: SyncCeiling? = nil, recordsSync: Bool = false) {
        self.floor = floor
        self.ceiling = ceiling
        self.recordsSync = recordsSync || floor != nil || ceiling != nil
        self.keepsItems = keepsItems
        self.deltasCarryItems = deltasCarryItems
        self.deltaPerPage = deltaPerPage
        self.maxItems = maxItems
        self.deduplicates = deduplicates
        self.skipsOnFirstPage = skipsOnFirstPage
    }

    /// Adds page `index`; returns what the prefix gained: nothing when it did not advance, else
    /// one delta (with `deltaPerPage`, one delta per page added).
    mutating func add(_ index: Int, _ page: Page) -> [SnapshotDelta] {
        // A page before the next one was added already; but where pieces jump, the order is not
        // the numbering (a piece split as it goes has its new pieces after it, numbered later).
        guard !reachedLimit, !reachedBound, repeatedPage == nil, jumped || index >= nextIndex else { return [] }
        pending[index] = page
        deltaLastPages.removeAll(keepingCapacity: true)
        var deltas: [SnapshotDelta] = []
        let opening: [UInt8] = deltasCarryItems ? [UInt8(ascii: "[")] : []
        var json = opening
        var ends: [Int] = []
        var added = 0
        var open = false // pages were added since the last delta was closed
        func close() {
            if deltasCarryItems { json.append(UInt8(ascii: "]")) }
            deltas.append(SnapshotDelta(json: json, items: added, totalItems: itemCount, pages: pageCount, prefixBytes: prefixCount,
                                        itemEnds: ends, greatest: greatest))
            deltaLastPages.append(lastIndex)
            json = opening
            ends = []
            added = 0
            open = false
        }
        while let page = pending.removeValue(forKey: nextIndex) {
            if !page.items.isEmpty {
                if let last = lastPage, last.index == lastIndex, Self.sameItems(page, last.page) {
                    repeatedPage = nextIndex
                    pending.removeAll()
                    break
                }
                lastPage = (nextIndex, page)
            }
            let index = nextIndex
            nextIndex = jumps.removeValue(forKey: index) ?? index + 1
            lastIndex = index
            pageCount += 1
            open = true
            added += append(page, index: index, to: &json, ends: &ends, first: added == 0)
            if reachedLimit || reachedBound {
                pending.removeAll()
                break
            }
            if deltaPerPage { close() }
        }
        if open { close() }
        return deltas
    }

    /// Whether two pages hold the same items, byte for byte. Pages of a list differ early (the
    /// first item's id), so the comparison of two different pages stops within a few bytes.
    private static func sameItems(_ page: Page, _ other: Page) -> Bool {
        guard page.items.count == other.items.count, let first = page.items.first, let last = page.items.last,
              let otherFirst = other.items.first, let otherLast = other.items.last,
              last.upperBound - first.lowerBound == otherLast.upperBound - otherFirst.lowerBound else { return false }
        return page.body.withUnsafeBytes { bytes in
            other.body.withUnsafeBytes { otherBytes in
                memcmp(bytes.baseAddress! + first.lowerBound, otherBytes.baseAddress! + otherFirst.lowerBound,
                       last.upperBound - first.lowerBound) == 0
            }
        }
    }

    /// The page after page `index` is page `next` (a split list's next piece starts there).
    /// Said before the page after it arrives.
    mutating func jump(after index: Int, to next: Int) {
        jumped = true
        if lastIndex == index, nextIndex == index + 1 {
            nextIndex = next // said once the page was in (page one, planned after it was added)
        } else {
            jumps[index] = next
        }
    }

    /// Drops the held pages after `index`: they turned out to lie past the end of the list.
    mutating func discard(after index: Int) {
        pending = pending.filter { $0.key <= index }
    }

    /// Appends the new items of page `index` to `json` (and the kept prefix), and where each
    /// ends to `ends`; returns how many.
    private mutating func append(_ page: Page, index: Int, to json: inout [UInt8], ends: inout [Int], first: Bool) -> Int {
        var added = 0
        var needsComma = !first
        // Items separated by a bare comma in the body (compact JSON, the common case) are copied
        // as one run: one copy per page instead of one per item.
        var run: Range<Int>?
        var runStart = 0   // where the run lands in `json`
        var kept: [Range<Int>] = []   // this page's runs for the kept prefix
        func copyRun() {
            guard let bytes = run else { return }
            if deltasCarryItems { json.append(contentsOf: page.body[bytes]) }
            if keepsItems { kept.append(bytes) }
            run = nil
        }
        for (position, range) in page.items.enumerated() where index > 0 || position >= skipsOnFirstPage {
            if let maxItems, itemCount >= maxItems {
                reachedLimit = true
                cut = (index, position)
                break
            }
            let syncValue = recordsSync && position < page.syncValues.count ? page.syncValues[position] : nil
            let identity = page.identities.isEmpty ? nil : page.identities[position]
            if let syncValue {
                switch floor?.verdict(syncValue, identity) ?? .deliver {
                case .stop:
                    // A newest-first list reached what an earlier run saw: the rest is older still.
                    reachedBound = true
                case .skip: continue
                case .deliver: break
                }
                if reachedBound { break }
                if let ceiling, !ceiling.holds(syncValue, identity) { continue }
            }
            if deduplicates, let identity {
                guard seen.insert(identity).inserted else { continue }
                if !keepsItems { remember(identity) }
            }
            if let bytes = run, range.lowerBound == bytes.upperBound + 1, page.body[bytes.upperBound] == UInt8(ascii: ",") {
                run = bytes.lowerBound..<range.upperBound
            } else {
                copyRun()
                if needsComma, deltasCarryItems { json.append(UInt8(ascii: ",")) }
                runStart = json.count
                run = range
            }
            needsComma = true
            if deltasCarryItems { ends.append(runStart + range.upperBound - run!.lowerBound) }
            itemCount += 1
            added += 1
            if let syncValue {
                if greatest == nil {
                    greatest = SyncMark(value: syncValue, seen: page.identities.isEmpty ? nil : [])
                }
                greatest!.take(syncValue, identity)
            }
        }
        copyRun()
        keep(kept, of: page)
        if let maxItems, itemCount >= maxItems { reachedLimit = true }
        return added
    }

    /// Adds a page's `runs` of items to the kept prefix: as a piece of the body itself when they
    /// are one run that is most of it (nothing copied: the body is held instead, at most twice
    /// the items' bytes), else copied.
    private mutating func keep(_ runs: [Range<Int>], of page: Page) {
        guard let first = runs.first else { return }
        if prefixCount > 0 {
            prefix.append(Self.comma)
            prefixCount += 1
        }
        if runs.count == 1, first.count * 2 >= page.body.count {
            prefix.append(page.body[first])
            prefixCount += first.count
            return
        }
        var piece: [UInt8] = []
        piece.reserveCapacity(runs.reduce(runs.count - 1) { $0 + $1.count })
        for run in runs {
            if !piece.isEmpty { piece.append(UInt8(ascii: ",")) }
            piece.append(contentsOf: page.body[run])
        }
        prefix.append(piece[...])
        prefixCount += piece.count
    }

    private static let comma: ArraySlice<UInt8> = [UInt8(ascii: ",")]

    /// Keeps the most recent identities only (a ring of `streamingIdentityLimit`).
    private mutating func remember(_ identity: IdentityKey) {
        if recent.count < Self.streamingIdentityLimit {
            recent.append(identity)
            return
        }
        seen.remove(recent[oldest])
        recent[oldest] = identity
        oldest = (oldest + 1) % recent.count
    }

    /// The first `bytes` bytes of the kept prefix (a snapshot's `prefixBytes`): the JSON array's
    /// elements, in the pieces that hold them (not copied).
    func prefixPieces(bytes: Int) -> [ArraySlice<UInt8>] {
        var left = min(max(bytes, 0), prefixCount)
        var pieces: [ArraySlice<UInt8>] = []
        for piece in prefix where left > 0 {
            pieces.append(piece.prefix(left))
            left -= min(left, piece.count)
        }
        return pieces
    }

    /// The first `bytes` bytes of the kept prefix as one JSON array.
    func prefixJSON(bytes: Int) -> [UInt8] {
        Self.jsonArray(prefixPieces(bytes: bytes))
    }

    /// `pieces` (of `prefixPieces`) as one JSON array.
    static func jsonArray(_ pieces: [ArraySlice<UInt8>]) -> [UInt8] {
        var json: [UInt8] = []
        json.reserveCapacity(pieces.reduce(2) { $0 + $1.count })
        json.append(UInt8(ascii: "["))
        for piece in pieces { json.append(contentsOf: piece) }
        json.append(UInt8(ascii: "]"))
        return json
    }
}

/// What one snapshot added to the ordered prefix.
public struct SnapshotDelta: Sendable {
    /// The added items as a JSON array.
    public var json: [UInt8]
    /// How many items were added.
    public var items: Int
    /// Items in the prefix now.
    public var totalItems: Int
    /// Pages in the prefix now.
    public var pages: Int
    /// Bytes of the kept prefix once this delta is in it (0 when items are not kept).
    var prefixBytes: Int
    /// Where each item ends in `json` (the next one starts after a comma).
    package var itemEnds: [Int] = []
    /// The greatest sync value among the items of the prefix through this delta, and the
    /// identities at it (see `ListDescription.until` and `.since`).
    var greatest: SyncMark? = nil
}
