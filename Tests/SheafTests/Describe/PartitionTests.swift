import Foundation
import XCTest
@testable import Sheaf

private let numbered = Paging.pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 10)))

private func plan(_ count: Int, pages: Int?, total: Int?, paging: Paging = numbered, why: String? = nil) -> [Partition] {
    Partition.plan(count: count, url: "https://h/x?per_page=10&page=1", paging: paging, signals: anchorList().signals, preset: nil,
                   pageCount: pages, pageSize: 10, total: total, why: why, window: 64)
}

/// Partitions: the plan (pure), their JSON form, and runs of them against a scripted server.
final class PartitionTests: XCTestCase {
    func testEachPartitionGetsAnEvenShareOfThePlansWindowAndReadsItBack() throws {
        XCTAssertEqual(plan(3, pages: 20, total: 200).map(\.window), [21, 21, 21], "64 / 3: together at most 63")
        XCTAssertEqual(plan(100, pages: 100, total: 1000).map(\.window), Array(repeating: 1, count: 100),
                       "at least 1 each")
        XCTAssertEqual(plan(4, pages: nil, total: nil).map(\.window), [64], "one partition: the whole window")
        let partition = plan(2, pages: 4, total: 40)[1]
        XCTAssertEqual(try Partition(partition.description).window, 32)
        var text = partition.description.replacingOccurrences(of: "\"window\":32", with: "\"window\":0")
        XCTAssertThrowsError(try Partition(text)) { XCTAssertTrue("\($0)".contains("/window"), "\($0)") }
        text = partition.description.replacingOccurrences(of: "\"window\":32,", with: "")
        XCTAssertNil(try Partition(text).window, "a partition without a window: the running client's alone")
    }

    func testTheWindowIsSharedAmongThePartitionsThatRunAtOnce() {
        func windows(_ count: Int, atOnce: Int) -> [Int?] {
            Partition.plan(count: count, url: "https://h/x?per_page=10&page=1", paging: numbered, signals: anchorList().signals,
                           preset: nil, pageCount: 40, pageSize: 10, total: 400, why: nil, window: 64, atOnce: atOnce).map(\.window)
        }
        XCTAssertEqual(windows(8, atOnce: 2), Array(repeating: 32, count: 8), "two at a time: half the window each")
        XCTAssertEqual(windows(8, atOnce: 3), Array(repeating: 21, count: 8), "three at a time: together at most 63")
        XCTAssertEqual(windows(8, atOnce: 8), windows(8, atOnce: 100), "as many at once as there are, or more: all of them")
        XCTAssertEqual(windows(8, atOnce: 8), Array(repeating: 8, count: 8))
        XCTAssertEqual(windows(8, atOnce: 0), Array(repeating: 8, count: 8), "nonsense reads as all at once, the safe share")
    }

    func testAPlanCoversEveryPageOnceInContiguousRangesAndItsLastIsOpenEnded() {
        for pages in 2...13 {
            for count in 1...16 {
                let total = pages * 10 - 3
                let partitions = plan(count, pages: pages, total: total)
                let label = "\(count) partitions over \(pages) pages"
                XCTAssertEqual(partitions.count, min(count, pages), label)
                var next = 0
                for (index, partition) in partitions.enumerated() {
                    XCTAssertEqual(partition.index, index, label)
                    XCTAssertEqual(partition.count, partitions.count, label)
                    XCTAssertEqual(partition.firstPage, next, "contiguous: \(label)")
                    XCTAssertGreaterThanOrEqual(partition.pages, 1, label)
                    XCTAssertEqual(partition.openEnded, index == partitions.count - 1, label)
                    XCTAssertNil(partition.why, label)
                    next += partition.pages
                }
                XCTAssertEqual(next, pages, "every page once: \(label)")
                XCTAssertEqual(partitions.map { $0.itemsExpected ?? -1 }.reduce(0, +), total, label)
                let sizes = partitions.map(\.pages)
                XCTAssertLessThanOrEqual(sizes.max()! - sizes.min()!, 1, "as even as can be: \(label)")
            }
        }
    }

    func testAListThatCannotBeSplitIsOnePartitionSayingWhy() {
        for (partitions, why) in [(plan(4, pages: nil, total: nil, paging: .next, why: "walked by next link"), "walked by next link"),
                                  (plan(4, pages: nil, total: nil), "no page count is known from page one"),
                                  (plan(4, pages: 1, total: 7), "the list has one page")] {
            XCTAssertEqual(partitions.count, 1)
            XCTAssertEqual(partitions[0].why, why)
            XCTAssertTrue(partitions[0].openEnded)
            XCTAssertEqual(partitions[0].firstPage, 0)
        }
    }

    func testAPartitionReadsBackAsWrittenAndAMalformedOneIsRefusedNamingItsField() throws {
        let partition = plan(3, pages: 10, total: 97)[1]
        let read = try Partition(partition.description)
        XCTAssertEqual(read, partition)
        XCTAssertEqual(read.firstPage, 4)
        XCTAssertEqual(read.pages, 3)
        for (field, value, named) in [("first_page", "\"x\"", "/first_page"), ("sheaf_partition", "2", "/sheaf_partition"),
                                      ("url", "\"ftp://h/x\"", "/url"), ("index", "-1", "/index"),
                                      ("open_ended", "1", "/open_ended")] {
            let text = partition.description.replacingOccurrences(
                of: try XCTUnwrap(partition.description.range(of: "\"\(field)\":[^,]*", options: .regularExpression)
                    .map { String(partition.description[$0]) }), with: "\"\(field)\":\(value)")
            XCTAssertThrowsError(try Partition(text), field) { error in
                let error = error as! SheafError
                XCTAssertEqual(error.code, .invalidArgument)
                XCTAssertTrue(error.message.contains(named), error.message)
            }
        }
        // Numbers a forger may pick: refused, never a trap.
        let huge = partition.description.replacingOccurrences(of: "\"first_page\":4", with: "\"first_page\":9007199254740000")
            .replacingOccurrences(of: "\"page_size\":10", with: "\"page_size\":9007199254740000")
        XCTAssertThrowsError(try Partition(huge)) { XCTAssertEqual(($0 as! SheafError).code, .invalidArgument) }
        var forged = partition
        forged.firstPage = 1 << 52
        forged.pageSize = 1 << 52
        var forgedList = ListDescription(path: "/v1/things")
        forgedList.partition = forged
        forged.url = scriptedList
        forgedList.partition = forged
        XCTAssertThrowsError(try scriptedClient(ScriptedTransport()).makeList(forgedList)) {
            XCTAssertEqual(($0 as! SheafError).code, .invalidArgument)
        }
        XCTAssertThrowsError(try Partition(partition.description.replacingOccurrences(of: "\"kind\":\"page_number\"", with: "\"kind\":\"pages\""))) {
            XCTAssertTrue(($0 as! SheafError).message.contains("/description/paging/kind"), "\($0)")
        }
    }

    func testThePartitionsOfAListRunOnClientsOfTheirOwnGiveItsItemsOnceInOrder() throws {
        let api = FakeAnchorAPI(count: 95)
        let secret = "k3y-value-123456"
        var list = anchorList()
        list.query = [("api_key", secret)]
        let planner = ScriptedTransport()
        planner.on(scriptedList) { request, _ in api.reply(request) }
        let partitions = try scriptedClient(planner).partitions(of: list, count: 4)
        XCTAssertEqual(planner.requests.count, 1, "page one is read once")
        XCTAssertEqual(partitions.map(\.pages), [3, 3, 2, 2])
        XCTAssertEqual(partitions.map(\.firstPage), [0, 3, 6, 8])
        XCTAssertEqual(partitions.map { $0.itemsExpected ?? -1 }, [30, 30, 20, 15])
        var all: [Int] = []
        for partition in partitions {
            let text = partition.description
            XCTAssertFalse(text.contains(secret), text)
            XCTAssertFalse(text.contains(scriptedToken), text)
            // A process of its own: a new client, the partition from its text.
            let transport = ScriptedTransport()
            transport.on(scriptedList) { request, _ in api.reply(request) }
            var description = ListDescription(path: "/elsewhere")
            description.query = [("api_key", secret)]
            description.partition = try Partition(text)
            let run = try scriptedClient(transport).makeList(description)
            try run.start()
            XCTAssertEqual(try run.wait(), .complete, "partition \(partition.index)")
            let ids = itemIDs(run.prefixJSON())
            XCTAssertEqual(ids.count, partition.itemsExpected, "partition \(partition.index)")
            XCTAssertEqual(transport.requests.count, partition.pages, "partition \(partition.index): its pages alone")
            XCTAssertTrue(transport.requests.allSatisfy { $0.url.contains("api_key=\(secret)") }, "the client's secret sent again")
            XCTAssertNil(run.resumeToken(), "a range done leaves nothing to resume")
            all += ids
        }
        XCTAssertEqual(all, Array(0..<95))
    }

    func testAPartitionAsksAheadOfItsPageOneAsManyPagesAsItsOriginsWindowHasGrownTo() throws {
        // Its pages exist (the plan counted them): a client whose window grew on an earlier
        // partition sends that window at once, each page's body capped at its share of 32 MiB.
        let api = FakeAnchorAPI(count: 400)
        let planner = ScriptedTransport()
        planner.on(scriptedList) { request, _ in api.reply(request) }
        let partitions = try scriptedClient(planner).partitions(of: anchorList(), count: 2, atOnce: 1)
        XCTAssertEqual(partitions.map(\.pages), [20, 20])
        XCTAssertEqual(partitions.map(\.window), [64, 64])
        let transport = ScriptedTransport()
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(21) ? api.reply(request).after(100) : api.reply(request).after(5)
        }
        let client = try scriptedClient(transport) { $0.adaptsWindow = true; $0.maxWindow = 32 }
        func run(_ partition: Partition) throws -> [Int] {
            var description = ListDescription(path: "/elsewhere")
            description.partition = partition
            let run = try client.makeList(description)
            try run.start()
            XCTAssertEqual(try run.wait(), .complete)
            return itemIDs(run.prefixJSON())
        }
        XCTAssertEqual(try run(partitions[0]), Array(0..<200))
        let grown = client.pace(for: scriptedList).window
        XCTAssertGreaterThan(grown, ClientConfiguration().window, "the first partition grew the window")
        let before = transport.requests.count
        XCTAssertEqual(try run(partitions[1]), Array(200..<400))
        let ahead = min(20, grown)
        let second = transport.requests.dropFirst(before)
        XCTAssertEqual(second.filter { $0.maxBodyBytes == RunStart.aheadBodyCap(pagesAhead: ahead) }.count, ahead - 1,
                       "page one of the range, and the grown window's other pages with it")
        XCTAssertEqual(second.count, 20, "its pages alone")
        XCTAssertEqual(RunStart.aheadBodyCap(pagesAhead: 8), 4 << 20)
        XCTAssertEqual(RunStart.aheadBodyCap(pagesAhead: 32), 1 << 20, "32 MiB between them, whatever their number")
    }

    func testAPartitionKeepsItsTokenInsideItsRange() throws {
        let api = FakeAnchorAPI(count: 95)
        let transport = ScriptedTransport()
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let client = try scriptedClient(transport)
        let partition = try client.partitions(of: anchorList(), count: 3)[1] // pages 4 to 6
        var description = ListDescription(path: "/v1/things")
        description.partition = partition
        description.maxPages = 1
        let first = try client.makeList(description)
        try first.start()
        XCTAssertEqual(try first.wait(), .finished(.pageBudget))
        XCTAssertEqual(itemIDs(first.prefixJSON()), Array(40..<50))
        description.maxPages = nil
        description.resume = try XCTUnwrap(first.resumeToken())
        let rest = try client.makeList(description)
        try rest.start()
        XCTAssertEqual(try rest.wait(), .complete)
        XCTAssertEqual(itemIDs(rest.prefixJSON()), Array(50..<70))
        // The token of the middle partition does not run inside another.
        var other = ListDescription(path: "/v1/things")
        other.partition = try client.partitions(of: anchorList(), count: 3)[0]
        other.resume = description.resume
        XCTAssertThrowsError(try client.makeList(other)) { XCTAssertTrue(($0 as! SheafError).message.contains("outside the partition")) }
    }

    func testAListWalkedByNextLinksIsOnePartitionThatRunsWhole() throws {
        let api = FakeAnchorAPI(count: 25)
        let transport = ScriptedTransport()
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let client = try scriptedClient(transport)
        let partitions = try client.partitions(of: linkedList(), count: 4)
        XCTAssertEqual(partitions.count, 1)
        XCTAssertTrue(partitions[0].why?.contains("next link") == true, "\(partitions[0].why ?? "nil")")
        var description = ListDescription(path: "/v1/things")
        description.partition = partitions[0]
        let run = try client.makeList(description)
        try run.start()
        XCTAssertEqual(try run.wait(), .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<25))
    }

    func testAPartitionOffTheClientsOriginIsRefused() throws {
        var partition = plan(2, pages: 4, total: 40)[1]
        partition.url = "https://elsewhere.example.com/v1/things?page=1&per_page=10"
        var description = ListDescription(path: "/v1/things")
        description.partition = partition
        XCTAssertThrowsError(try scriptedClient(ScriptedTransport()).makeList(description)) {
            XCTAssertEqual(($0 as! SheafError).code, .invalidArgument)
            XCTAssertTrue(($0 as! SheafError).message.contains("origin"), "\($0)")
        }
        XCTAssertThrowsError(try scriptedClient(ScriptedTransport()).partitions(of: anchorList(), count: 0))
    }
}
