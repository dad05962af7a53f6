import Foundation
import XCTest
@testable import Sheaf

private let base = "https://api.example.com/v1/things"
private let pageNumbers = Paging.pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 10)))

private func fetched(_ actions: [PagePlanner.Action]) -> [Int] {
    actions.compactMap { if case .fetch(let index, _) = $0 { index } else { nil } }
}

private func page(_ count: Int, next: String? = nil, total: Int? = nil) -> Page {
    var page = Page(body: [], items: Array(repeating: 0..<0, count: count), identities: [], next: next, total: total)
    page.more = next != nil ? true : nil
    return page
}

/// The items of a pager's answer, or nil for anything but a page.
private func ids(_ next: ListPager.Next, file: StaticString = #filePath, line: UInt = #line) -> [Int]? {
    guard case .page(let snapshot) = next else { return nil }
    return itemIDs(snapshot.delta.json, file: file, line: line)
}

private func ending(_ next: ListPager.Next) -> ListOutcome? {
    if case .end(let outcome) = next { return outcome }
    return nil
}

/// Waits (bounded) until `condition` holds.
private func eventually(_ what: String, within seconds: Double = 10, _ condition: () -> Bool,
                        file: StaticString = #filePath, line: UInt = #line) {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { return XCTFail("never: \(what)", file: file, line: line) }
        usleep(2_000)
    }
}

/// Load-more lists: the planner's gate, and `ListPager` over a scripted transport.
final class ListPagerTests: XCTestCase {
    // MARK: The planner's gate

    func testAGatedParallelPlanFetchesOnlyBelowItsGate() {
        var planner = PagePlanner(firstURL: "\(base)?page=1&per_page=10", paging: pageNumbers, window: 8, maxPages: 100, pageGate: 2)
        XCTAssertEqual(fetched(planner.start()), [0])
        XCTAssertEqual(fetched(planner.pageArrived(0, page(10, total: 55))), [1])
        XCTAssertEqual(planner.pageArrived(1, page(10, total: 55)), [.accept(index: 1)], "waits at the gate, not finished")
        XCTAssertEqual(fetched(planner.raiseGate(to: 4)), [2, 3])
        XCTAssertEqual(planner.raiseGate(to: 3), [], "a gate only rises")
        _ = planner.pageArrived(2, page(10, total: 55))
        _ = planner.pageArrived(3, page(10, total: 55))
        XCTAssertEqual(fetched(planner.raiseGate(to: 100)), [4, 5])
        _ = planner.pageArrived(4, page(10, total: 55))
        XCTAssertEqual(planner.pageArrived(5, page(5, total: 55)).last, .finish(.allPages(expectedTotal: 55, missingPages: [])))
    }

    func testAGatedWalkKeepsTheLinkItWouldFollowUntilTheGateRises() {
        var planner = PagePlanner(firstURL: "\(base)?c=0", paging: .next, window: 8, maxPages: 100, pageGate: 1)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(10, next: "\(base)?c=1")), [.accept(index: 0)])
        XCTAssertEqual(planner.raiseGate(to: 2), [.fetch(index: 1, url: "\(base)?c=1")])
        XCTAssertEqual(planner.pageArrived(1, page(10)).last, .finish(.allPages(expectedTotal: nil, missingPages: [])))
    }

    func testTheCallersPageBudgetStillEndsAGatedList() {
        var planner = PagePlanner(firstURL: "\(base)?c=0", paging: .next, window: 8, maxPages: 100, pageBudget: 1, pageGate: 1)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(10, next: "\(base)?c=1")).last, .finish(.stopped(index: 1, reason: .pageBudget)))
    }

    // MARK: The pager

    private func pager(_ api: FakeAnchorAPI, list: ListDescription = anchorList(), lookAhead: Int = 0,
                       delayMilliseconds: Int = 0) throws -> (ListPager, ScriptedTransport) {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { request, _ in api.reply(request).after(delayMilliseconds) }
        return (try scriptedClient(transport).makePager(list, lookAhead: lookAhead), transport)
    }

    func testEachNextFetchesAndHandsOutExactlyOnePage() throws {
        for list in [anchorList(), linkedList()] {
            let (pager, transport) = try pager(FakeAnchorAPI(count: 35), list: list)
            XCTAssertEqual(pager.status, .idle)
            XCTAssertNil(pager.lastPage)
            XCTAssertTrue(transport.requests.isEmpty, "nothing is fetched before the first next")
            for number in 1...4 {
                XCTAssertEqual(ids(try pager.next()), Array((number - 1) * 10..<min(number * 10, 35)))
                XCTAssertEqual(transport.requests.count, number)
                XCTAssertEqual(pager.lastPage?.delta.pages, number)
            }
            XCTAssertEqual(ending(try pager.next()), .complete)
            XCTAssertEqual(pager.status, .ended)
            XCTAssertEqual(pager.outcome, .complete)
            XCTAssertEqual(ending(try pager.next()), .complete, "the end stays")
            XCTAssertEqual(transport.requests.count, 4)
            XCTAssertEqual(itemIDs(pager.prefixJSON()), Array(0..<35))
            XCTAssertNil(pager.resumeToken())
        }
    }

    func testCallsWhileAPageIsOnItsWayJoinIt() throws {
        let (pager, transport) = try pager(FakeAnchorAPI(count: 100), delayMilliseconds: 300)
        let answers = Shared<[[Int]?]>([])
        let done = DispatchGroup()
        for _ in 0..<8 { // threads of their own: a pool of two cores' width would run them in turns
            done.enter()
            Thread {
                let answer = try? pager.next()
                answers.update { $0.append(answer.flatMap { ids($0) }) }
                done.leave()
            }.start()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(answers.value, Array(repeating: Array(0..<10), count: 8))
        XCTAssertEqual(transport.requests.count, 1)
        // A caller that stopped waiting: the page stays asked for, and the next call gets it.
        guard case .pending = try pager.next(timeoutMilliseconds: 0) else { return XCTFail("not pending") }
        XCTAssertEqual(pager.status, .loading)
        XCTAssertEqual(ids(try pager.next()), Array(10..<20))
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testAPageThatArrivedAfterItsCallerGaveUpIsHandedOutNext() throws {
        let (pager, transport) = try pager(FakeAnchorAPI(count: 100), delayMilliseconds: 20)
        guard case .pending = try pager.next(timeoutMilliseconds: 0) else { return XCTFail("not pending") }
        eventually("the page arrives") { pager.pagesReady == 1 }
        XCTAssertEqual(pager.status, .idle)
        XCTAssertEqual(ids(try pager.next(timeoutMilliseconds: 0)), Array(0..<10))
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testLookAheadFetchesPagesAheadAndHoldsThemBack() throws {
        let (pager, transport) = try pager(FakeAnchorAPI(count: 45), lookAhead: 2)
        XCTAssertEqual(ids(try pager.next()), Array(0..<10))
        eventually("two pages ahead") { pager.pagesReady == 2 }
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(itemIDs(pager.prefixJSON()), Array(0..<10), "pages ahead are not handed out")
        XCTAssertEqual(pager.lastPage?.delta.totalItems, 10)
        XCTAssertEqual(ids(try pager.next(timeoutMilliseconds: 0)), Array(10..<20))
        eventually("the window moves on") { transport.requests.count == 4 && pager.pagesReady == 2 }
        XCTAssertEqual(ids(try pager.next(timeoutMilliseconds: 0)), Array(20..<30))
        XCTAssertEqual(ids(try pager.next()), Array(30..<40))
        XCTAssertEqual(ids(try pager.next()), Array(40..<45))
        XCTAssertEqual(ending(try pager.next()), .complete)
        XCTAssertEqual(transport.requests.count, 5)
    }

    func testAFailureAheadComesAfterThePagesBeforeIt() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 100)
        transport.on(scriptedList) { request, _ in
            FakeAnchorAPI.query(request.url, "page") == "3" ? .status(404) : api.reply(request)
        }
        let pager = try scriptedClient(transport).makePager(linkedList(), lookAhead: 3)
        XCTAssertEqual(ids(try pager.next()), Array(0..<10))
        XCTAssertEqual(ids(try pager.next()), Array(10..<20))
        guard case .failed(let error)? = ending(try pager.next()) else { return XCTFail("no failure") }
        XCTAssertEqual(error.httpStatus, 404)
        XCTAssertEqual(pager.status, .ended)
        XCTAssertNotNil(pager.resumeToken(), "a failed list can be resumed after the pages handed out")
    }

    func testResetStartsOverFromTheFirstPage() throws {
        let (pager, transport) = try pager(FakeAnchorAPI(count: 100))
        _ = try pager.next()
        _ = try pager.next()
        pager.reset()
        XCTAssertEqual(pager.status, .idle)
        XCTAssertEqual(pager.prefixJSON(), Array("[]".utf8))
        XCTAssertEqual(ids(try pager.next()), Array(0..<10))
        XCTAssertEqual(pager.lastPage?.delta.pages, 1)
        XCTAssertEqual(transport.requests.map(\.url), [1, 2, 1].map { scriptedPage($0) })
    }

    func testAResetEndsTheCallsWaitingForThePageItDropped() throws {
        let (pager, _) = try pager(FakeAnchorAPI(count: 100), delayMilliseconds: 5_000)
        let waiting = DispatchGroup()
        let answer = Shared<ListOutcome?>(nil)
        DispatchQueue.global().async(group: waiting) { answer.update { $0 = (try? pager.next()).flatMap(ending) } }
        eventually("the page is asked for") { pager.status == .loading }
        pager.reset()
        XCTAssertEqual(waiting.wait(timeout: .now() + 10), .success)
        guard case .failed(let error)? = answer.value else { return XCTFail("the waiting call was not ended") }
        XCTAssertEqual(error.code, .cancelled)
    }

    func testTheTokenOfAPagerGoesOnAfterThePagesHandedOut() throws {
        let (pager, transport) = try pager(FakeAnchorAPI(count: 45), list: linkedList(), lookAhead: 2)
        _ = try pager.next()
        _ = try pager.next()
        eventually("pages ahead") { pager.pagesReady == 2 }
        var resumed = linkedList()
        resumed.resume = try XCTUnwrap(pager.resumeToken())
        let run = try scriptedClient(transport).makeList(resumed)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(20..<45))
    }
}
