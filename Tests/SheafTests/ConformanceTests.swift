import Foundation
import XCTest
@testable import Sheaf

/// The same behaviours whichever way Swift runs a list: `fetchAll` (decoded), `snapshots` (an
/// `AsyncSequence`), a pager (`more()`), a run with a snapshot callback, a group of one list
/// (`ListGroup`, its deltas to a callback), and the list planned as one partition, that
/// partition then fetched (`partitions(of:count:atOnce:)`, `ListDescription.partition`), over
/// anchor lists and a cursor list split by its range filter. Tests/c/conformance.c and
/// bindings/python/tests/test_conformance.py hold the C and Python modes to the same.
private struct Item: Decodable, Sendable {
    let id: Int
}

private enum Mode: String, CaseIterable {
    case fetchAll, snapshots, pager, callback, group, partition
}

/// What a mode made of a list: the ids its consumer received, in order, and how it ended.
private struct Ran {
    var ids: [Int] = []
    /// nil for `fetchAll`, which returns the items alone.
    var stopReason: StopReason?
    var error: SheafError?
}

private func consume(_ mode: Mode, _ client: SheafClient, _ list: ListDescription, stopAtFirst: Bool = false) async -> Ran {
    var ran = Ran()
    switch mode {
    case .fetchAll, .partition:
        var list = list
        if mode == .partition {
            do {
                list.partition = try client.partitions(of: list, count: 1, atOnce: 1)[0]
            } catch {
                ran.error = error
                return ran
            }
        }
        do {
            let items = try await client.fetchAll(Item.self, list)
            ran.ids = items.map(\.id)
            ran.stopReason = items.stopReason
        } catch {
            ran.ids = error.items.map(\.id)
            ran.error = error.error
        }
    case .snapshots:
        var snapshots = client.snapshots(Item.self, list).makeAsyncIterator()
        do {
            while let snapshot = try await snapshots.next() {
                ran.ids += snapshot.items.map(\.id)
                if stopAtFirst { break }
            }
        } catch {
            ran.error = error
        }
        ran.stopReason = snapshots.stopReason
        if stopAtFirst { _ = snapshots }   // dropped at the end of this scope: the list stops
    case .pager:
        do {
            let pager = try client.makePager(list, lookAhead: 1)
            paging: while true {
                switch try await pager.more() {
                case .page(let page):
                    ran.ids += itemIDs(page.delta.json)
                    if stopAtFirst {
                        pager.close()
                        break paging
                    }
                case .end(let outcome):
                    ran.stopReason = outcome.stopReason
                    ran.error = outcome.error
                    break paging
                case .pending:
                    continue
                }
            }
        } catch {
            ran.error = error
        }
    case .callback:
        let received = Shared<[Int]>([])
        do {
            let listRun = try client.makeList(list) { snapshot in
                received.update { $0 += itemIDs(snapshot.delta.json) }
                return !stopAtFirst
            }
            try listRun.start()
            let outcome = try listRun.wait()
            ran.stopReason = outcome.stopReason
            ran.error = outcome.error
        } catch {
            ran.error = error
        }
        ran.ids = received.value
    case .group:
        let received = Shared<[Int]>([])
        let ended = Shared<ListOutcome?>(nil)
        do {
            let group = client.makeGroup()
            try group.add(list)
            try group.start { delta in
                if let snapshot = delta.snapshot { received.update { $0 += itemIDs(snapshot.delta.json) } }
                if let outcome = delta.outcome { ended.update { $0 = outcome } }
                return !stopAtFirst
            }
            // The list's own outcome is what conforms (a group with a failed list ends `.partial`).
            _ = try group.wait()
            let outcome = ended.value ?? group.run(at: 0)?.outcome
            ran.stopReason = outcome?.stopReason
            ran.error = outcome?.error
        } catch {
            ran.error = error
        }
        ran.ids = received.value
    }
    return ran
}

final class ConformanceTests: XCTestCase {
    private func client(_ transport: ScriptedTransport, attempts: Int = 4) throws -> SheafClient {
        try scriptedClient(transport) {
            $0.window = 4
            $0.retry.maxAttempts = attempts
        }
    }

    func testEveryModeDeliversEveryItemInOrderAndEndsComplete() async throws {
        for count in [97, 0] {
            let transport = ScriptedTransport()
            let api = FakeAnchorAPI(count: count)
            transport.on(scriptedList) { request, _ in api.reply(request).after(Int.random(in: 0...3)) }
            let client = try client(transport)
            for mode in Mode.allCases {
                let ran = await consume(mode, client, anchorList())
                XCTAssertNil(ran.error, "\(mode)")
                XCTAssertEqual(ran.ids, Array(0..<count), "\(mode)")
                XCTAssertEqual(ran.stopReason, StopReason.complete, "\(mode)")
            }
        }
    }

    func testEveryModeDeliversACursorListSplitByItsRangeFilterWholeInOrderOnce() async throws {
        let transport = ScriptedTransport()
        var created = Array(repeating: 1_700_000_500, count: 150)   // a burst in one second
        created += (0..<1200).map { 1_700_000_000 + $0 }
        let api = FakeStripeAPI(created: created)
        transport.on("https://api.example.com/v1/charges") { request, _ in api.reply(request).after(Int.random(in: 0...2)) }
        let client = try client(transport)
        for mode in Mode.allCases {
            let ran = await consume(mode, client, try stripeList())
            XCTAssertNil(ran.error, "\(mode)")
            XCTAssertTrue(ran.ids == api.items.map(\.id), "\(mode): \(ran.ids.count) items, each once, in the list's order")
            XCTAssertEqual(ran.stopReason, StopReason.complete, "\(mode)")
        }
    }

    func testAConsumerThatStopsAtItsFirstDeliveryStopsTheList() async throws {
        for mode in [Mode.snapshots, .pager, .callback, .group] {
            let transport = ScriptedTransport()
            let api = FakeAnchorAPI(count: 10_000)
            transport.on(scriptedList) { request, _ in api.reply(request).after(20) }
            let ran = await consume(mode, try client(transport), anchorList(), stopAtFirst: true)
            XCTAssertEqual(ran.ids, Array(0..<10), "\(mode)")
            // A fetch that was being handed to the transport as the stop came may still get there
            // (then it is cancelled at once); nothing is started after that.
            try await Task.sleep(nanoseconds: 10_000_000)
            let atTheStop = transport.requests.count
            try await Task.sleep(nanoseconds: 150_000_000)   // seven latencies: a list going on sends more
            XCTAssertEqual(transport.requests.count, atTheStop, "\(mode): requests after the stop")
            XCTAssertEqual(transport.outstanding, 0, "\(mode): what was in flight was abandoned")
        }
    }

    func testEachBudgetEndsWithoutAFailureWithItsStopReasonAndItsTokenCompletesTheList() async throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 200)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let client = try client(transport)
        let budgets: [(WritableKeyPath<ListDescription, Int?>, Int, StopReason, Int)] = [
            (\.maxItems, 27, .itemLimit, 27), (\.maxPages, 3, .pageBudget, 30), (\.maxRequests, 2, .requestBudget, 20),
        ]
        for mode in Mode.allCases {
            for (budget, value, reason, count) in budgets {
                var list = anchorList()
                list[keyPath: budget] = value
                let ran = await consume(mode, client, list)
                XCTAssertNil(ran.error, "\(mode) \(reason)")
                XCTAssertEqual(ran.ids, Array(0..<count), "\(mode) \(reason)")
                XCTAssertEqual(ran.stopReason, reason, "\(mode)")
            }
        }
    }

    func testAFailureMidListKeepsTheItemsBeforeIt() async throws {
        for mode in Mode.allCases {
            let transport = ScriptedTransport()
            let api = FakeAnchorAPI(count: 300)
            transport.on(scriptedList) { request, _ in request.url == scriptedPage(5) ? .status(500) : api.reply(request) }
            let ran = await consume(mode, try client(transport, attempts: 1), anchorList())
            XCTAssertEqual(ran.error?.code, .http, "\(mode)")
            XCTAssertEqual(ran.ids, Array(0..<40), "\(mode): pages 1 to 4")
            XCTAssertNil(ran.stopReason, "\(mode)")
        }
    }
}
