import Foundation
import XCTest
@testable import Sheaf

private let charges = "https://api.example.com/v1/charges"

/// Runs `description` against `api` through a scripted transport (answers after `delay` ms, from
/// another thread), returning the item ids in the order delivered, the outcome and the run.
private func runSplit(_ api: FakeStripeAPI, _ description: ListDescription, window: Int = 16, delay: Int = 1,
                      onRequest: (@Sendable (HTTPRequest) -> Void)? = nil,
                      file: StaticString = #filePath, line: UInt = #line) throws -> (ids: [Int], outcome: ListOutcome?, run: ListRun) {
    let transport = ScriptedTransport()
    transport.on(charges) { request, _ in
        let reply = api.reply(request)
        onRequest?(request)
        return reply.after(delay)
    }
    let log = SnapshotLog()
    let run = try scriptedClient(transport) { $0.window = window; $0.maxWindow = window }.makeList(description, onSnapshot: log.callback)
    try run.start()
    let ended = outcome(of: run, within: 30, file: file, line: line)
    log.markFinished()
    return (log.ids, ended, run)
}

/// The ids of `api`'s items in the list's order.
private func expectedIDs(_ api: FakeStripeAPI) -> [Int] { api.items.map(\.id) }

final class RangeSplitTests: XCTestCase {
    func testACursorListWithARangeFilterIsReadInPiecesEachItemOnceInTheListsOrder() throws {
        // 3,000 items over about a day, 30 pages of 100.
        let api = FakeStripeAPI(created: (0..<3000).map { 1_700_000_000 + $0 * 29 })
        let (ids, outcome, run) = try runSplit(api, try stripeList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(ids, expectedIDs(api))
        let described = String(decoding: run.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(described.contains(#""plan":"split""#), described)
        XCTAssertTrue(described.contains(#""split_plan":"split on /created into "#), described)
        XCTAssertGreaterThan(api.filteredRequests, 16, "pieces and probes carry the range filter")
    }

    func testTheWindowIsFilledByPiecesNotOnePageAtATime() throws {
        let api = FakeStripeAPI(created: (0..<5000).map { 1_700_000_000 + $0 * 7 })
        let transport = ScriptedTransport()
        transport.on(charges) { request, _ in api.reply(request).after(20) }
        let client = try scriptedClient(transport) { $0.window = 16; $0.maxWindow = 16 }
        let run = try client.makeList(try stripeList())
        try run.start()
        XCTAssertEqual(outcome(of: run, within: 30), .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), expectedIDs(api))
        XCTAssertGreaterThanOrEqual(transport.maxOutstanding, 12, "pieces are walked side by side")
        // 50 pages, 13 probes, page one, and the pieces' ends: far from 50 pages one after another,
        // and far from a request per item.
        XCTAssertLessThan(api.requests, 50 + 13 + 4 * 16 + 2)
    }

    func testBurstsSharingOneSecondLieInOnePieceAndAreWalkedByTheCursor() throws {
        // 450 items in each of four seconds, sparse items between.
        var created: [Int] = []
        for burst in 0..<4 { created += Array(repeating: 1_700_000_000 + burst * 5_000, count: 450) }
        created += (0..<400).map { 1_700_000_000 + $0 * 50 + 1 }
        let api = FakeStripeAPI(created: created)
        let (ids, outcome, run) = try runSplit(api, try stripeList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertTrue(ids == expectedIDs(api))
        XCTAssertEqual(Set(ids).count, created.count)
        if ProcessInfo.processInfo.environment["SPLIT_DEBUG"] != nil {
            let missing = Set(expectedIDs(api)).subtracting(ids)
            let createdOf = Dictionary(uniqueKeysWithValues: api.items.map { ($0.id, $0.created) })
            print("missing", missing.count, Set(missing.map { createdOf[$0]! }).sorted().prefix(20))
            print(String(decoding: run.descriptionJSON(), as: UTF8.self).suffix(120))
        }
    }

    func testItemsAddedDuringTheRunAreNeverHalfRead() throws {
        let api = FakeStripeAPI(created: (0..<2000).map { 1_700_000_000 + $0 * 13 })
        let before = expectedIDs(api)
        let newest = api.items.first!.created
        let sent = Shared(0)
        let (ids, outcome, _) = try runSplit(api, try stripeList(), onRequest: { _ in
            // Each request adds an item: newer than all, and one in the same second as the newest.
            let count = sent.update { $0 += 1; return $0 }
            api.insert(created: count % 2 == 0 ? newest : newest + count)
        })
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(Set(ids).count, ids.count, "no item twice")
        // Every item that existed at the start is there, in order; an item added later is there
        // at most once, where it belongs (only those of the newest second can be).
        XCTAssertEqual(ids.filter { before.contains($0) }, before)
        let added = ids.filter { !before.contains($0) }
        XCTAssertTrue(added.allSatisfy { id in api.items.first { $0.id == id }!.created == newest }, "\(added)")
    }

    func testAServerThatIgnoresTheFilterIsWalkedAsOnePieceWithoutDuplicates() throws {
        let api = FakeStripeAPI(created: (0..<1500).map { 1_700_000_000 + $0 * 11 }, ignoresFilter: true)
        let (ids, outcome, run) = try runSplit(api, try stripeList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(ids, expectedIDs(api))
        let described = String(decoding: run.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(described.contains("walked as one piece: the server ignores the range filter"), described)
        // The walk plus page one's probes (13): 15 pages, not a walk per piece.
        XCTAssertLessThanOrEqual(api.requests, 15 + 13 + 1)
    }

    func testAListNotInTheFiltersOrderIsWalkedAsOnePieceAndSaysWhy() throws {
        var description = try stripeList()
        description.split?.order = .oldestFirst
        let api = FakeStripeAPI(created: (0..<500).map { 1_700_000_000 + $0 * 11 })
        let (ids, outcome, run) = try runSplit(api, description)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(ids, expectedIDs(api))
        let described = String(decoding: run.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(described.contains("walked as one piece: page one is not ordered by /created oldest first"), described)
    }

    func testTheCallersOwnLowerBoundEndsTheLastPiece() throws {
        let api = FakeStripeAPI(created: (0..<3000).map { 1_700_000_000 + $0 * 10 })
        var description = try stripeList()
        description.query = [("created[gte]", "1700015000")]
        let (ids, outcome, _) = try runSplit(api, description)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(ids, api.items.filter { $0.created >= 1_700_015_000 }.map(\.id))
    }

    func testABudgetStopsThePiecesAndTheTokenGoesOnExactly() throws {
        let api = FakeStripeAPI(created: (0..<2500).map { 1_700_000_000 + $0 * 17 })
        var description = try stripeList()
        var delivered: [Int] = []
        var rounds = 0
        while rounds < 40 {
            rounds += 1
            description.maxPages = 4
            let (ids, outcome, run) = try runSplit(api, description)
            if ProcessInfo.processInfo.environment["SPLIT_DEBUG"] != nil {
                print("round", rounds, ids.first ?? -1, ids.last ?? -1, ids.count, outcome as Any, run.resumeToken()?.point as Any)
            }
            delivered += ids
            guard outcome == .finished(.pageBudget) else {
                XCTAssertEqual(outcome, .complete)
                break
            }
            guard let token = run.resumeToken() else { return XCTFail("a budget's stop gives a token") }
            description.resume = token
        }
        XCTAssertGreaterThan(rounds, 3)
        XCTAssertEqual(delivered.count, 2500)
        XCTAssertTrue(delivered == expectedIDs(api), "resumed runs together deliver the list once, in order")
    }

    func testAnItemLimitCutsThePrefixAndTheTokenGoesOnInsideThePage() throws {
        let api = FakeStripeAPI(created: (0..<1200).map { 1_700_000_000 + $0 * 3 })
        var description = try stripeList()
        description.maxItems = 250
        let (first, outcome, run) = try runSplit(api, description)
        XCTAssertEqual(outcome, .finished(.itemLimit))
        XCTAssertEqual(first, Array(expectedIDs(api).prefix(250)))
        description.maxItems = nil
        description.resume = try XCTUnwrap(run.resumeToken())
        let (rest, restOutcome, _) = try runSplit(api, description, onRequest: { request in
            if ProcessInfo.processInfo.environment["SPLIT_DEBUG"] != nil { print("resumed:", request.url) }
        })
        XCTAssertEqual(restOutcome, .complete)
        XCTAssertEqual((first + rest).count, 1200)
        XCTAssertTrue(first + rest == expectedIDs(api), "the two runs deliver the list once, in order")
    }

    func testAPieceThatFailsKeepsThePrefixBeforeIt() throws {
        let api = FakeStripeAPI(created: (0..<2000).map { 1_700_000_000 + $0 * 5 })
        let transport = ScriptedTransport()
        let failing = Shared(false)
        transport.on(charges) { request, _ in
            // Every page of a piece below the middle of the range fails for good (probes are of
            // one item, and answer).
            let query = URLComponents(string: request.url)?.queryItems ?? []
            if let upper = query.first(where: { $0.name == "created[lt]" })?.value.flatMap({ Int($0) }), upper < 1_700_005_000,
               query.contains(where: { $0.name == "limit" && $0.value == "100" }) {
                failing.update { $0 = true }
                return .status(404, body: #"{"error":{"message":"gone"}}"#)
            }
            return api.reply(request).after(1)
        }
        let run = try scriptedClient(transport) { $0.window = 8 }.makeList(try stripeList())
        try run.start()
        let ended = outcome(of: run, within: 30)
        XCTAssertTrue(failing.value)
        XCTAssertEqual(ended?.error?.code, .http)
        let ids = itemIDs(run.prefixJSON())
        XCTAssertEqual(ids, Array(expectedIDs(api).prefix(ids.count)), "what arrived is a prefix of the list")
        XCTAssertLessThan(ids.count, 2000)
    }

    func testAFilterIsReadFromItsSpellingAndItsJSON() throws {
        let spelled = try RangeFilter(spelled: "/ts:oldest,latest")
        XCTAssertEqual(spelled.field, JSONPointer("/ts"))
        XCTAssertEqual(spelled.lower, .init(parameter: "oldest", inclusive: false))
        XCTAssertEqual(try RangeFilter(spelled: "/created:created[gte],created[lt]:oldest_first").order, .oldestFirst)
        XCTAssertTrue(try RangeFilter(spelled: "/c:created_at_min,created_at_max").upper.inclusive)
        for bad in ["created:a,b", "/c:a", "/c:a,b:sideways", ":a,b", "/c:,b"] {
            XCTAssertThrowsError(try RangeFilter(spelled: bad), bad)
        }
        var description = ListDescription(path: "/v1/charges")
        try description.describe(json: Array(#"{"preset":"stripe"}"#.utf8))
        let printed = description.json(resolution: nil, plan: nil)
        var again = ListDescription(path: "/v1/charges")
        try again.describe(json: printed)
        XCTAssertEqual(again.split, description.split)
        XCTAssertEqual(again.split?.lower, .init(parameter: "created[gte]", inclusive: true))
        try again.describe(json: Array(#"{"paging":{"kind":"cursor","param":"after"},"signals":{"cursor":{"source":"body","where":"/next"}},"split":{"field":"/id","lower":"since_id","upper":{"param":"max_id","inclusive":true},"order":"oldest_first","kind":"integer"}}"#.utf8))
        XCTAssertEqual(again.split, RangeFilter(field: JSONPointer("/id")!, lower: .init(parameter: "since_id", inclusive: false),
                                                upper: .init(parameter: "max_id", inclusive: true), order: .oldestFirst, kind: .integer))
        for bad in [#"{"split":{"field":"id","lower":"a","upper":"b"}}"#, #"{"split":{"field":"/id","lower":"a","upper":"a"}}"#,
                    #"{"split":{"field":"/id","lower":"a","upper":"b","order":"up"}}"#,
                    #"{"split":{"field":"/id","lower":"a","upper":"b","kind":"float"}}"#] {
            var refused = ListDescription(path: "/x")
            XCTAssertThrowsError(try { try refused.describe(json: Array(bad.utf8)); try refused.check() }(), bad)
        }
    }

    func testValuesOfEachKindReadAndWriteExactly() {
        XCTAssertEqual(RangeValue(.string("1512085950.000216"), kind: .decimal)?.units, 1_512_085_950_000_216)
        XCTAssertEqual(RangeValue(.number("1512085950.5"), kind: .decimal)?.queryText, "1512085950.500000")
        XCTAssertEqual(RangeValue(.string("2024-02-29T23:59:59Z"), kind: .time)?.queryText, "2024-02-29T23:59:59Z")
        XCTAssertEqual(RangeValue(.string("2024-03-01T01:00:00.25+02:00"), kind: .time)?.queryText, "2024-02-29T23:00:00.250000Z")
        XCTAssertEqual(RangeValue(.string("1970-01-01T00:00:00Z"), kind: .time)?.units, 0)
        XCTAssertEqual(RangeValue(.string("1969-12-31T23:59:59.999999Z"), kind: .time)?.units, -1)
        XCTAssertEqual(RangeValue(.number("-5"), kind: .integer)?.units, -5)
        for bad in ["1e5", "12345678901234567890", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00", "1.1234567", "x"] {
            XCTAssertNil(RangeValue.kind(of: .string(bad)).flatMap { RangeValue(.string(bad), kind: $0) }, bad)
        }
        XCTAssertEqual(RangeValue.kind(of: .number("1700000000")), .integer)
        XCTAssertEqual(RangeValue.kind(of: .string("1512085950.000216")), .decimal)
        XCTAssertEqual(RangeValue.kind(of: .string("2024-05-01T12:00:00Z")), .time)
    }
}

final class RangeSplitPartitionTests: XCTestCase {
    func testPartitionsOfASplitListAreRangesWhoseUnionIsTheListOnceInOrder() throws {
        let api = FakeStripeAPI(created: (0..<4000).map { 1_700_000_000 + $0 * 9 })
        let transport = ScriptedTransport()
        transport.on(charges) { request, _ in api.reply(request).after(1) }
        let client = try scriptedClient(transport) { $0.window = 16; $0.maxWindow = 16 }
        let partitions = try client.partitions(of: try stripeList(), count: 4)
        XCTAssertEqual(partitions.count, 4)
        XCTAssertTrue(partitions.allSatisfy { $0.why == nil && $0.url.contains("created%5Blt%5D=") || $0.url.contains("created[lt]=") })
        // Added after the plan: in no partition (the first is bounded by page one's first item).
        api.insert(created: 1_800_000_000)
        var ids: [Int] = []
        for partition in partitions {
            let text = partition.description
            var description = try stripeList()
            description.partition = try Partition(text)   // through its JSON, as another process gets it
            let run = try client.makeList(description)
            try run.start()
            XCTAssertEqual(outcome(of: run, within: 30), .complete, text)
            ids += itemIDs(run.prefixJSON())
        }
        XCTAssertEqual(ids, expectedIDs(api).filter { $0 != 4001 })
    }

    func testAListWithoutARangeFilterSaysWhyItIsOnePartition() throws {
        let api = FakeStripeAPI(created: (0..<500).map { 1_700_000_000 + $0 })
        let transport = ScriptedTransport()
        transport.on(charges) { request, _ in api.reply(request) }
        var description = try stripeList()
        description.split = nil
        let partitions = try scriptedClient(transport).partitions(of: description, count: 4)
        XCTAssertEqual(partitions.count, 1)
        XCTAssertTrue(partitions[0].why?.contains("a range filter would split it") == true, partitions[0].why ?? "")
    }
}

final class RangeSplitDensityTests: XCTestCase {
    func testAPieceDenserThanPageOneSaidIsSplitAgainAsItGoesAndNothingIsLostOrRepeated() throws {
        // Sparse at the top (page one spans a long time), dense below: the plan's pieces are too
        // few and long where the items are, and those are split again while the window has room.
        var created = (0..<300).map { 1_700_000_000 - $0 * 1000 }
        created += (0..<6000).map { 1_699_000_000 - $0 }
        let api = FakeStripeAPI(created: created)
        let (ids, outcome, run) = try runSplit(api, try stripeList(), window: 16, delay: 2)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(ids.count, created.count)
        XCTAssertTrue(ids == expectedIDs(api), "each item once, in the list's order")
        let described = String(decoding: run.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(described.contains("split again as they went"), described)
    }
}

final class RangeSplitPagerTests: XCTestCase {
    func testALoadMoreListOfASplitListFetchesOnlyWhatItsCallerAskedForAhead() throws {
        let api = FakeStripeAPI(created: (0..<3000).map { 1_700_000_000 + $0 * 5 })
        let transport = ScriptedTransport()
        transport.on(charges) { request, _ in api.reply(request).after(1) }
        let pager = try scriptedClient(transport) { $0.window = 16 }.makePager(try stripeList(), lookAhead: 1)
        var ids: [Int] = []
        for _ in 0..<4 {
            guard case .page(let page) = try pager.next(timeoutMilliseconds: 10_000) else { return XCTFail("a page") }
            ids += itemIDs(page.delta.json)
        }
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(ids, Array(expectedIDs(api).prefix(ids.count)))
        // Page one, the probes, the four pages handed out and the one looked ahead (and those a
        // piece's end let the next one take): not the whole list.
        let pages = transport.requests.filter { !$0.url.contains("limit=1&") && !$0.url.hasSuffix("limit=1") }.count
        XCTAssertLessThanOrEqual(pages, 4 + 2 + 1, "\(pages) pages fetched")
        pager.close()
    }
}
