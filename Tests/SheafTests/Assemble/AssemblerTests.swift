import XCTest
@testable import Sheaf

/// A page whose items are the JSON numbers `ids`, each its own identity.
private func page(_ ids: [Int]) -> Page {
    var body: [UInt8] = []
    var items: [Range<Int>] = []
    var identities: [IdentityKey?] = []
    for id in ids {
        let text = Array(String(id).utf8)
        items.append(body.count..<(body.count + text.count))
        identities.append(IdentityKey(bytes: text))
        body += text + [UInt8(ascii: " ")]
    }
    return Page(body: body, items: items, identities: identities, next: nil, total: nil)
}

private func numbers(_ json: [UInt8]) -> [Int]? {
    let text = String(decoding: json, as: UTF8.self)
    guard text.hasPrefix("["), text.hasSuffix("]") else { return nil }
    let inner = text.dropFirst().dropLast()
    if inner.isEmpty { return [] }
    let parts = inner.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
    return parts.contains(nil) ? nil : parts.map { $0! }
}

/// An assembler that remembers the newest delta's prefix length, to read the whole prefix.
private struct TrackedAssembler {
    var assembler: Assembler
    var prefixBytes = 0

    init(keepsItems: Bool, maxItems: Int?, deduplicates: Bool) {
        assembler = Assembler(keepsItems: keepsItems, maxItems: maxItems, deduplicates: deduplicates)
    }

    mutating func add(_ index: Int, _ page: Page) -> SnapshotDelta? {
        let delta = assembler.add(index, page).first
        if let delta { prefixBytes = delta.prefixBytes }
        return delta
    }

    var itemCount: Int { assembler.itemCount }
    var pageCount: Int { assembler.pageCount }
    var reachedLimit: Bool { assembler.reachedLimit }
    func prefixJSON() -> [UInt8] { assembler.prefixJSON(bytes: prefixBytes) }
    func prefixJSON(bytes: Int) -> [UInt8] { assembler.prefixJSON(bytes: bytes) }
}

final class AssemblerTests: XCTestCase {
    /// Without a snapshot consumer (fetch-all) deltas carry counts only; the prefix, the counts,
    /// the limit and the de-duplication are those of an assembler whose deltas carry the items.
    func testDeltasWithoutItemsCountTheSameAndKeepTheSamePrefix() {
        let pages = [page([1, 2, 3]), page([3, 4]), page([]), page([5, 6, 7])]
        for maxItems in [nil, 4] as [Int?] {
            var full = Assembler(keepsItems: true, maxItems: maxItems, deduplicates: true)
            var counted = Assembler(keepsItems: true, maxItems: maxItems, deduplicates: true, deltasCarryItems: false)
            for index in [1, 0, 3, 2] {   // out of order: page 1 waits for page 0
                let withItems = full.add(index, pages[index]), withoutItems = counted.add(index, pages[index])
                XCTAssertEqual(withoutItems.map(\.items), withItems.map(\.items))
                XCTAssertEqual(withoutItems.map(\.totalItems), withItems.map(\.totalItems))
                XCTAssertEqual(withoutItems.map(\.pages), withItems.map(\.pages))
                XCTAssertEqual(withoutItems.map(\.prefixBytes), withItems.map(\.prefixBytes))
                XCTAssertTrue(withoutItems.allSatisfy { $0.json.isEmpty && $0.itemEnds.isEmpty })
            }
            XCTAssertEqual(counted.reachedLimit, full.reachedLimit)
            XCTAssertEqual(numbers(counted.prefixJSON(bytes: .max)), numbers(full.prefixJSON(bytes: .max)))
            XCTAssertEqual(numbers(counted.prefixJSON(bytes: .max)), maxItems == nil ? [1, 2, 3, 4, 5, 6, 7] : [1, 2, 3, 4])
        }
    }

    func testPagesArrivingInOrderAreEmittedOneByOne() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
        let first = try XCTUnwrap(assembler.add(0, page([1, 2])))
        XCTAssertEqual(numbers(first.json), [1, 2])
        XCTAssertEqual(first.items, 2)
        XCTAssertEqual(first.totalItems, 2)
        XCTAssertEqual(first.pages, 1)
        let second = try XCTUnwrap(assembler.add(1, page([3])))
        XCTAssertEqual(numbers(second.json), [3])
        XCTAssertEqual(second.totalItems, 3)
        XCTAssertEqual(second.pages, 2)
    }

    func testPagesArrivingOutOfOrderAreHeldUntilTheGapFills() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
        XCTAssertNil(assembler.add(2, page([5, 6])))
        XCTAssertNil(assembler.add(1, page([3, 4])))
        XCTAssertEqual(assembler.itemCount, 0)
        XCTAssertEqual(numbers(assembler.prefixJSON()), [])
        let delta = try XCTUnwrap(assembler.add(0, page([1, 2])))
        XCTAssertEqual(numbers(delta.json), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(delta.items, 6)
        XCTAssertEqual(delta.pages, 3)
        XCTAssertNil(assembler.add(4, page([9])))
        let next = try XCTUnwrap(assembler.add(3, page([7, 8])))
        XCTAssertEqual(numbers(next.json), [7, 8, 9])
        XCTAssertEqual(next.totalItems, 9)
        XCTAssertEqual(next.pages, 5)
    }

    func testDiscardedPagesPastTheEndNeverReachThePrefix() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
        XCTAssertNil(assembler.add(3, page([7])))
        XCTAssertNil(assembler.add(2, page([5, 6])))
        assembler.assembler.discard(after: 1)
        XCTAssertNotNil(assembler.add(0, page([1, 2])))
        let last = try XCTUnwrap(assembler.add(1, page([3, 4])))
        XCTAssertEqual(numbers(last.json), [3, 4])
        XCTAssertEqual(last.pages, 2)
        XCTAssertEqual(numbers(assembler.prefixJSON()), [1, 2, 3, 4])
    }

    func testDeltasConcatenateToTheWholeListWhateverTheArrivalOrder() {
        let pages = (0..<12).map { index in page(Array((index * 7)..<(index * 7 + (index == 5 ? 0 : 7)))) }
        let expected = pages.flatMap { page in page.items.map { Int(String(decoding: page.body[$0], as: UTF8.self))! } }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
            var collected: [Int] = []
            var lastTotal = 0
            for index in Array(0..<pages.count).shuffled(using: &generator) {
                guard let delta = assembler.add(index, pages[index]) else { continue }
                collected += numbers(delta.json) ?? [-1]
                XCTAssertEqual(delta.totalItems, lastTotal + delta.items)
                lastTotal = delta.totalItems
            }
            XCTAssertEqual(collected, expected)
            XCTAssertEqual(numbers(assembler.prefixJSON()), expected)
            XCTAssertEqual(assembler.pageCount, pages.count)
        }
    }

    func testEmptyPagesAdvanceThePrefixWithoutAddingCommas() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
        XCTAssertNil(assembler.add(2, page([3])))
        XCTAssertNil(assembler.add(1, page([])))
        let delta = try XCTUnwrap(assembler.add(0, page([])))
        XCTAssertEqual(String(decoding: delta.json, as: UTF8.self), "[3]")
        let empty = try XCTUnwrap(assembler.add(3, page([])))
        XCTAssertEqual(String(decoding: empty.json, as: UTF8.self), "[]")
        XCTAssertEqual(empty.items, 0)
        XCTAssertEqual(empty.pages, 4)
    }

    func testAPageAddedTwiceIsIgnored() {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
        _ = assembler.add(0, page([1]))
        XCTAssertNil(assembler.add(0, page([1])))
        XCTAssertEqual(assembler.itemCount, 1)
    }

    func testDeduplicationKeepsTheFirstOccurrenceInListOrder() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: true)
        // Page 1 arrives first; its 2 and 3 repeat the end of page 0 (a list that shifted).
        XCTAssertNil(assembler.add(1, page([2, 3, 4, 5])))
        let delta = try XCTUnwrap(assembler.add(0, page([1, 2, 3])))
        XCTAssertEqual(numbers(delta.json), [1, 2, 3, 4, 5])
        let more = try XCTUnwrap(assembler.add(2, page([5, 6, 1, 6])))
        XCTAssertEqual(numbers(more.json), [6])
        XCTAssertEqual(more.items, 1)
        XCTAssertEqual(assembler.itemCount, 6)
        XCTAssertEqual(numbers(assembler.prefixJSON()), [1, 2, 3, 4, 5, 6])
    }

    func testItemsWithoutIdentityAreNeverDeduplicated() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: true)
        var anonymous = page([7, 7])
        anonymous = Page(body: anonymous.body, items: anonymous.items, identities: [nil, nil], next: nil, total: nil)
        let delta = try XCTUnwrap(assembler.add(0, anonymous))
        XCTAssertEqual(numbers(delta.json), [7, 7])
    }

    func testWithoutDeduplicationRepeatsAreKept() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
        _ = assembler.add(0, page([1, 2]))
        let delta = try XCTUnwrap(assembler.add(1, page([2, 3])))
        XCTAssertEqual(numbers(delta.json), [2, 3])
        XCTAssertEqual(assembler.itemCount, 4)
    }

    func testMaxItemsTruncatesExactlyInTheMiddleOfAPage() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: 5, deduplicates: false)
        XCTAssertNil(assembler.add(1, page([4, 5, 6])))
        XCTAssertFalse(assembler.reachedLimit)
        let delta = try XCTUnwrap(assembler.add(0, page([1, 2, 3])))
        XCTAssertEqual(numbers(delta.json), [1, 2, 3, 4, 5])
        XCTAssertEqual(delta.totalItems, 5)
        XCTAssertTrue(assembler.reachedLimit)
        XCTAssertNil(assembler.add(2, page([7])), "nothing is added after the limit")
        XCTAssertEqual(numbers(assembler.prefixJSON()), [1, 2, 3, 4, 5])
    }

    func testMaxItemsCountsItemsAfterDeduplication() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: 3, deduplicates: true)
        let delta = try XCTUnwrap(assembler.add(0, page([1, 1, 2, 2, 3, 4])))
        XCTAssertEqual(numbers(delta.json), [1, 2, 3])
        XCTAssertTrue(assembler.reachedLimit)
    }

    func testMaxItemsReachedAtAPageBoundaryStopsThere() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: 2, deduplicates: false)
        let delta = try XCTUnwrap(assembler.add(0, page([1, 2])))
        XCTAssertEqual(numbers(delta.json), [1, 2])
        XCTAssertTrue(assembler.reachedLimit)
        XCTAssertNil(assembler.add(1, page([3])))
    }

    func testMaxItemsZeroAddsNothing() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: 0, deduplicates: false)
        let delta = try XCTUnwrap(assembler.add(0, page([1, 2])))
        XCTAssertEqual(delta.items, 0)
        XCTAssertEqual(numbers(delta.json), [])
        XCTAssertTrue(assembler.reachedLimit)
    }

    func testWithoutKeepingItemsThePrefixStaysEmptyButDeltasCarryTheItems() throws {
        var assembler = TrackedAssembler(keepsItems: false, maxItems: nil, deduplicates: true)
        let delta = try XCTUnwrap(assembler.add(0, page([1, 2])))
        XCTAssertEqual(numbers(delta.json), [1, 2])
        _ = assembler.add(1, page([2, 3]))
        XCTAssertEqual(assembler.itemCount, 3)
        XCTAssertEqual(String(decoding: assembler.prefixJSON(), as: UTF8.self), "[]")
    }

    func testThePrefixCanBeCutAtAnEarlierSnapshot() throws {
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
        let first = try XCTUnwrap(assembler.add(0, page([10, 11])))
        let second = try XCTUnwrap(assembler.add(1, page([12])))
        XCTAssertEqual(numbers(assembler.prefixJSON(bytes: 0)), [])
        XCTAssertEqual(numbers(assembler.prefixJSON(bytes: first.prefixBytes)), [10, 11])
        XCTAssertEqual(numbers(assembler.prefixJSON(bytes: second.prefixBytes)), [10, 11, 12])
        XCTAssertEqual(second.prefixBytes, "10,11,12".utf8.count)
    }

    func testWithoutKeepingItemsNoDeltaHasPrefixBytes() throws {
        var assembler = TrackedAssembler(keepsItems: false, maxItems: nil, deduplicates: false)
        XCTAssertEqual(try XCTUnwrap(assembler.add(0, page([1, 2]))).prefixBytes, 0)
    }

    func testItemsAreCopiedVerbatim() throws {
        let body = Array(#"{"items":[ {"a" : "\u00e9", "b":[1, 2]} ,"x"]}"#.utf8)
        let page = Page(body: body, items: [11..<39, 41..<44], identities: [], next: nil, total: nil)
        var assembler = TrackedAssembler(keepsItems: true, maxItems: nil, deduplicates: false)
        let delta = try XCTUnwrap(assembler.add(0, page))
        XCTAssertEqual(String(decoding: delta.json, as: UTF8.self), #"[{"a" : "\u00e9", "b":[1, 2]},"x"]"#)
        XCTAssertEqual(String(decoding: assembler.prefixJSON(), as: UTF8.self), #"[{"a" : "\u00e9", "b":[1, 2]},"x"]"#)
    }

    func testAStreamRemembersARecentWindowOfIdentitiesNotTheWholeList() {
        // A stream with an identity grew without bound (2 M items: 119 -> 231 MiB).
        let limit = Assembler.streamingIdentityLimit
        var streaming = Assembler(keepsItems: false, maxItems: nil, deduplicates: true)
        var index = 0
        for start in stride(from: 0, to: limit + 2_000, by: 1_000) {
            _ = streaming.add(index, page(Array(start..<(start + 1_000))))
            index += 1
        }
        // A duplicate of a recent item is dropped; one older than the window is not.
        XCTAssertEqual(streaming.add(index, page([limit + 1_500, 5])).first?.items, 1)
        XCTAssertEqual(streaming.itemCount, limit + 2_000 + 1)
        var keeping = Assembler(keepsItems: true, maxItems: nil, deduplicates: true)
        for (position, start) in stride(from: 0, to: limit + 2_000, by: 1_000).enumerated() {
            _ = keeping.add(position, page(Array(start..<(start + 1_000))))
        }
        XCTAssertEqual(keeping.add(index, page([5])).first?.items, 0, "a list that keeps its items remembers every identity")
    }

    func testALoadMoreAssemblerHandsOutOneDeltaPerPageWhateverTheArrivalOrder() {
        var assembler = Assembler(keepsItems: true, maxItems: nil, deduplicates: false, deltaPerPage: true)
        XCTAssertTrue(assembler.add(2, page([5])).isEmpty)
        XCTAssertTrue(assembler.add(1, page([3, 4])).isEmpty)
        let deltas = assembler.add(0, page([1, 2]))
        XCTAssertEqual(deltas.map { numbers($0.json) ?? [] }, [[1, 2], [3, 4], [5]])
        XCTAssertEqual(deltas.map(\.pages), [1, 2, 3])
        XCTAssertEqual(deltas.map(\.totalItems), [2, 4, 5])
        XCTAssertEqual(numbers(assembler.prefixJSON(bytes: deltas[1].prefixBytes)), [1, 2, 3, 4])
    }
}
