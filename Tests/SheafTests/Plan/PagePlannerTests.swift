import XCTest
@testable import Sheaf

private let base = "https://api.example.com/v1/things"
private let pageNumbers = Paging.pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 500)))

/// A page of `count` items (the planner looks at the count, never at the bytes).
private func page(_ count: Int, next: String? = nil, total: Int? = nil) -> Page {
    Page(body: [], items: Array(repeating: 0..<0, count: count), identities: [], next: next, total: total)
}

private func pageURL(_ number: Int, _ rest: String = "&per_page=100") -> String {
    "\(base)?page=\(number)\(rest)"
}

private func planner(paging: Paging = pageNumbers, hasNext: Bool = true, window: Int = 4,
                     maxPages: Int = 10_000, first: String = "\(base)?page=1&per_page=500", pagesAhead: Int = 1) -> PagePlanner {
    PagePlanner(firstURL: first, paging: paging, pagesSignalTheEnd: hasNext, window: window, maxPages: maxPages,
                pagesAhead: pagesAhead)
}

private func makePlanner(window: Int = 4) -> PagePlanner { planner(window: window) }

/// A planner for `?page=N` from 1, without a page size, a next signal or a total.
private func numberWalker(window: Int) -> PagePlanner {
    planner(paging: .pageNumber(.init(parameter: "page", first: 1)),
            hasNext: false, window: window, first: "\(base)?page=1")
}

private func httpError(_ status: Int) -> SheafError {
    SheafError(.http, "HTTP \(status)", url: "x", httpStatus: status)
}

private extension [PagePlanner.Action] {
    var fetches: [Int: String] {
        var result: [Int: String] = [:]
        for case .fetch(let index, let url) in self { result[index] = url }
        return result
    }

    var ending: PagePlanner.Ending? {
        for case .finish(let ending) in self { return ending }
        return nil
    }
}

final class PagePlannerTests: XCTestCase {
    // MARK: Parallel pages

    func testAKnownTotalFetchesTheRemainingPagesInParallelUpToTheWindow() {
        var planner = planner(window: 4)
        XCTAssertEqual(planner.start(), [.fetch(index: 0, url: "\(base)?page=1&per_page=500")])
        let actions = planner.pageArrived(0, page(100, next: pageURL(2), total: 1000))
        XCTAssertEqual(actions, [.accept(index: 0),
                                 .fetch(index: 1, url: pageURL(2)), .fetch(index: 2, url: pageURL(3)),
                                 .fetch(index: 3, url: pageURL(4)), .fetch(index: 4, url: pageURL(5))])
        XCTAssertEqual(planner.mode, .parallel(pageCount: 10))
        XCTAssertEqual(planner.expectedPages, 10)
        XCTAssertEqual(planner.expectedTotal, 1000)
    }

    func testPagesAfterAStuckPageStopBeingFetchedTwoWindowsAhead() {
        var planner = planner(window: 2)
        _ = planner.start()
        var launched = Set(planner.pageArrived(0, page(100, next: pageURL(2), total: 3000)).fetches.keys)
        XCTAssertEqual(launched, [1, 2])
        // Page 1 never answers; everything after it does, at once.
        var index = 2
        while let next = launched.subtracting([1]).min(), next == index {
            launched.remove(next)
            launched.formUnion(planner.pageArrived(next, page(100)).fetches.keys)
            index += 1
        }
        // Held pages are bounded: nothing at or beyond page 1 + 2 × window is requested.
        XCTAssertEqual(index, 5)
        XCTAssertEqual(launched, [1])
        // Once the stuck page arrives, fetching resumes.
        XCTAssertEqual(Set(planner.pageArrived(1, page(100)).fetches.keys), [5, 6])
    }

    func testThePageCountComesFromThePageSizeTheServerServedNotTheOneAskedFor() {
        // Asked for 500 per page; the server capped it to 100.
        var planner = planner()
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 1001))
        XCTAssertEqual(planner.mode, .parallel(pageCount: 11))
    }

    func testPageURLsAreBuiltFromTheServersOwnNextLinkKeepingItsOtherParameters() {
        var planner = planner(window: 3)
        _ = planner.start()
        let next = "\(base)?sort=name&page=2&per_page=100&signature=abc%2Fdef"
        let fetches = planner.pageArrived(0, page(100, next: next, total: 400)).fetches
        XCTAssertEqual(fetches, [
            1: next,
            2: "\(base)?sort=name&page=3&per_page=100&signature=abc%2Fdef",
            3: "\(base)?sort=name&page=4&per_page=100&signature=abc%2Fdef",
        ])
    }

    func testANextLinkThatIsNotPageTwoLeavesTheFirstURLAsTheTemplate() {
        var planner = planner(window: 2)
        _ = planner.start()
        let fetches = planner.pageArrived(0, page(100, next: "\(base)?cursor=xyz", total: 300)).fetches
        XCTAssertEqual(fetches, [1: "\(base)?page=2&per_page=500", 2: "\(base)?page=3&per_page=500"])
    }

    func testPageNumbersCountFromTheFirstPageNumber() {
        var planner = planner(paging: .pageNumber(.init(parameter: "p", first: 0)),
                              window: 2, first: "\(base)?p=0")
        _ = planner.start()
        let fetches = planner.pageArrived(0, page(10, total: 30)).fetches
        XCTAssertEqual(fetches, [1: "\(base)?p=1", 2: "\(base)?p=2"])
    }

    func testTheWindowIsNeverExceededAndEveryPageIsFetchedOnce() {
        var planner = planner(window: 3)
        var inFlight = Set<Int>()
        var fetched: [Int] = []
        func apply(_ actions: [PagePlanner.Action]) {
            for (index, _) in actions.fetches {
                inFlight.insert(index)
                fetched.append(index)
            }
            XCTAssertLessThanOrEqual(inFlight.count, 3)
        }
        apply(planner.start())
        inFlight.remove(0)
        apply(planner.pageArrived(0, page(10, next: pageURL(2), total: 195)))
        var ending: PagePlanner.Ending?
        // Answer the newest page first, so pages finish out of order.
        while let index = inFlight.max() {
            inFlight.remove(index)
            let actions = planner.pageArrived(index, page(index == 19 ? 5 : 10))
            apply(actions)
            if let end = actions.ending { ending = end }
        }
        XCTAssertEqual(fetched.sorted(), Array(0..<20))
        XCTAssertEqual(ending, .allPages(expectedTotal: 195, missingPages: []))
        XCTAssertTrue(planner.isFinished)
    }

    func testAListThatFitsOnTheFirstPageFinishesAtOnce() {
        var planner = planner()
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(7, total: 7)),
                       [.accept(index: 0), .finish(.allPages(expectedTotal: 7, missingPages: []))])
    }

    func testAnEmptyFirstPageWithATotalFinishesWithThatTotalForTheRunToCompare() {
        var planner = planner()
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(0, total: 50)),
                       [.accept(index: 0), .finish(.allPages(expectedTotal: 50, missingPages: []))])
    }

    // MARK: Sequential walks

    func testWithoutPageNumbersTheNextLinksAreWalkedOneAtATime() {
        var planner = planner(paging: .next, first: base)
        XCTAssertEqual(planner.start(), [.fetch(index: 0, url: base)])
        XCTAssertEqual(planner.pageArrived(0, page(10, next: "\(base)?cursor=a", total: 25)),
                       [.accept(index: 0), .fetch(index: 1, url: "\(base)?cursor=a")])
        XCTAssertEqual(planner.mode, .sequential)
        XCTAssertNil(planner.expectedPages)
        XCTAssertEqual(planner.pageArrived(1, page(10, next: "\(base)?cursor=b")),
                       [.accept(index: 1), .fetch(index: 2, url: "\(base)?cursor=b")])
        XCTAssertEqual(planner.pageArrived(2, page(5, next: nil)),
                       [.accept(index: 2), .finish(.allPages(expectedTotal: 25, missingPages: []))])
    }


    func testANextLinkRepeatingAFetchedURLIsALoop() {
        var planner = planner(paging: .next, first: base)
        _ = planner.start()
        _ = planner.pageArrived(0, page(10, next: "\(base)?cursor=a"))
        _ = planner.pageArrived(1, page(10, next: "\(base)?cursor=b"))
        let actions = planner.pageArrived(2, page(10, next: "\(base)?cursor=a"))
        XCTAssertEqual(actions.first, .accept(index: 2))
        guard case .failed(let index, let error)? = actions.ending else {
            return XCTFail("expected a failure, got \(actions)")
        }
        XCTAssertEqual(index, 3)
        XCTAssertEqual(error.code, .loop)
        XCTAssertEqual(error.url, "\(base)?cursor=a")
    }

    func testANextLinkBackToTheFirstPageIsALoop() {
        var planner = planner(paging: .next, first: base)
        _ = planner.start()
        guard case .failed(_, let error)? = planner.pageArrived(0, page(10, next: base)).ending else {
            return XCTFail("expected a loop")
        }
        XCTAssertEqual(error.code, .loop)
    }

    func testALongWalkStopsAtThePageCap() {
        var planner = planner(paging: .next, maxPages: 3, first: base)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(1, next: "\(base)?c=1")).fetches.count, 1)
        XCTAssertEqual(planner.pageArrived(1, page(1, next: "\(base)?c=2")).fetches.count, 1)
        let actions = planner.pageArrived(2, page(1, next: "\(base)?c=3"))
        XCTAssertEqual(actions.fetches, [:])
        guard case .failed(let index, let error)? = actions.ending else { return XCTFail("\(actions)") }
        XCTAssertEqual(index, 3)
        XCTAssertEqual(error.code, .pageLimit)
    }

    func testAPlannedPageCountAboveThePageCapFailsBeforeFetchingAnyMore() {
        var planner = planner(maxPages: 9)
        _ = planner.start()
        let actions = planner.pageArrived(0, page(100, next: pageURL(2), total: 1000))
        XCTAssertEqual(actions.first, .accept(index: 0))
        XCTAssertEqual(actions.fetches, [:])
        guard case .failed(_, let error)? = actions.ending else { return XCTFail("\(actions)") }
        XCTAssertEqual(error.code, .pageLimit)
        XCTAssertTrue(error.message.contains("10 pages"), error.message)
    }

    func testAPlannedPageCountEqualToThePageCapIsAllowed() {
        var planner = planner(maxPages: 10)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(100, next: pageURL(2), total: 1000)).fetches.count, 4)
        XCTAssertEqual(planner.mode, .parallel(pageCount: 10))
    }

    func testAnEmptyFirstPageEndsAPageNumberWalk() {
        var planner = numberWalker(window: 4)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(0)),
                       [.accept(index: 0), .finish(.allPages(expectedTotal: nil, missingPages: []))])
    }

    func testWithANextSignalAPageWithoutANextLinkIsTheLast() {
        var planner = planner()
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(100)),
                       [.accept(index: 0), .finish(.allPages(expectedTotal: nil, missingPages: []))])
    }

    // MARK: Speculative parallel pages (page numbers, no total)

    func testPageNumbersWithoutATotalAreFetchedAWindowAhead() {
        var planner = planner(window: 4)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(100, next: pageURL(2))),
                       [.accept(index: 0), .fetch(index: 1, url: pageURL(2)), .fetch(index: 2, url: pageURL(3)),
                        .fetch(index: 3, url: pageURL(4)), .fetch(index: 4, url: pageURL(5))])
        XCTAssertEqual(planner.mode, .speculative)
        XCTAssertNil(planner.expectedPages)
        // Each page that names its successor by number moves the window on.
        XCTAssertEqual(planner.pageArrived(1, page(100, next: pageURL(3))),
                       [.accept(index: 1), .fetch(index: 5, url: pageURL(6))])
    }

    func testThePageWithoutANextLinkEndsTheListAndWhatWasFetchedPastItIsDropped() {
        var planner = planner(window: 4)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2))) // pages 1...4
        // Page 4 (past the end) arrives first: the assembler holds it, nothing is decided yet.
        XCTAssertEqual(planner.pageArrived(3, page(0)), [.cancel([4]), .discard(after: 3), .accept(index: 3)])
        // Page 3 is the last: page 4 is dropped before page 3 can carry it into the prefix.
        XCTAssertEqual(planner.pageArrived(2, page(30)), [.discard(after: 2), .accept(index: 2)])
        XCTAssertEqual(planner.expectedPages, 3)
        XCTAssertEqual(planner.pageArrived(1, page(100, next: pageURL(3))),
                       [.accept(index: 1), .finish(.allPages(expectedTotal: nil, missingPages: []))])
    }

    func testAFailurePastTheEndDoesNotFailTheList() {
        var planner = planner(window: 4)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2))) // pages 1...4
        XCTAssertEqual(planner.pageFailed(3, httpError(404)), [.cancel([4])], "whether it matters shows later")
        XCTAssertEqual(planner.pageArrived(1, page(100, next: pageURL(3))), [.accept(index: 1)])
        XCTAssertEqual(planner.pageArrived(2, page(7)),
                       [.discard(after: 2), .accept(index: 2), .finish(.allPages(expectedTotal: nil, missingPages: []))])
    }

    func testAFailureBeforeTheEndFailsTheList() {
        var planner = planner(window: 4)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2))) // pages 1...4
        let failure = httpError(404)
        XCTAssertEqual(planner.pageFailed(2, failure), [.cancel([3, 4])])
        XCTAssertEqual(planner.pageArrived(1, page(100, next: pageURL(3))),
                       [.accept(index: 1), .finish(.failed(index: 2, error: failure))])
    }

    func testANextLinkBackToAnEarlierPageNumberIsALoop() {
        var planner = planner(window: 4)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2)))
        let actions = planner.pageArrived(2, page(100, next: pageURL(2)))
        XCTAssertEqual(Array(actions.prefix(3)), [.cancel([3, 4]), .discard(after: 2), .accept(index: 2)])
        XCTAssertNil(actions.ending, "page 2 is still to come")
        guard case .failed(3, let error)? = planner.pageArrived(1, page(100, next: pageURL(3))).ending else {
            return XCTFail("expected a loop after page 3")
        }
        XCTAssertEqual(error.code, .loop)
    }

    func testANextLinkLeavingThePageNumbersIsWalkedOnceThePagesBeforeItAreIn() {
        var planner = planner(window: 4)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2))) // pages 1...4
        let cursor = "\(base)?cursor=abc"
        XCTAssertEqual(planner.pageArrived(2, page(100, next: cursor)),
                       [.cancel([3, 4]), .discard(after: 2), .accept(index: 2)])
        XCTAssertNil(planner.expectedPages)
        XCTAssertEqual(planner.pageArrived(1, page(100, next: pageURL(3))),
                       [.accept(index: 1), .fetch(index: 3, url: cursor)])
        XCTAssertEqual(planner.mode, .sequential)
        XCTAssertEqual(planner.pageArrived(3, page(5)),
                       [.accept(index: 3), .finish(.allPages(expectedTotal: nil, missingPages: []))])
    }

    func testSpeculationStopsAtThePageCapAndFailsIfTheLastAllowedPageSaysMore() {
        var planner = planner(window: 4, maxPages: 3)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(100, next: pageURL(2))).fetches.keys.sorted(), [1, 2])
        XCTAssertEqual(planner.pageArrived(2, page(100, next: pageURL(4))), [.accept(index: 2)])
        guard case .failed(3, let error)? = planner.pageArrived(1, page(100, next: pageURL(3))).ending else {
            return XCTFail("expected the page cap")
        }
        XCTAssertEqual(error.code, .pageLimit)
    }

    func testAFailureFoundOnTheLastPageInFlightFinishesTheListOnce() {
        var planner = planner(window: 4, maxPages: 3)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2)))
        _ = planner.pageArrived(1, page(100, next: pageURL(3)))
        let actions = planner.pageArrived(2, page(100, next: pageURL(4)))
        XCTAssertEqual(actions.filter { if case .finish = $0 { true } else { false } }.count, 1, "\(actions)")
        guard case .failed(3, let error)? = actions.ending else { return XCTFail("expected the page cap: \(actions)") }
        XCTAssertEqual(error.code, .pageLimit)
    }

    func testAListOfExactlyThePageCapIsComplete() {
        var planner = planner(window: 4, maxPages: 3)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2)))
        _ = planner.pageArrived(2, page(100))
        XCTAssertEqual(planner.pageArrived(1, page(100, next: pageURL(3))).ending,
                       .allPages(expectedTotal: nil, missingPages: []))
    }

    func testAPageCapOfOneFailsWhenPageOneNamesAPageTwo() {
        var planner = planner(window: 4, maxPages: 1)
        _ = planner.start()
        guard case .failed(1, let error)? = planner.pageArrived(0, page(100, next: pageURL(2))).ending else {
            return XCTFail("expected the page cap")
        }
        XCTAssertEqual(error.code, .pageLimit)
    }

    func testSpeculationAfterAStuckPageStopsTwoWindowsAhead() {
        var planner = planner(window: 2)
        _ = planner.start()
        var launched = Set(planner.pageArrived(0, page(100, next: pageURL(2))).fetches.keys)
        var index = 2
        while let next = launched.subtracting([1]).min(), next == index {
            launched.remove(next)
            launched.formUnion(planner.pageArrived(next, page(100, next: pageURL(next + 2))).fetches.keys)
            index += 1
        }
        XCTAssertEqual(index, 5)
        XCTAssertEqual(launched, [1])
    }

    func testPageNumbersWithoutTotalOrNextEndAtAShortPage() {
        var planner = numberWalker(window: 2)
        XCTAssertTrue(planner.walksPageNumbers)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(10)),
                       [.accept(index: 0), .fetch(index: 1, url: "\(base)?page=2"), .fetch(index: 2, url: "\(base)?page=3")])
        XCTAssertEqual(planner.pageArrived(1, page(10)), [.accept(index: 1), .fetch(index: 3, url: "\(base)?page=4")])
        XCTAssertEqual(planner.pageArrived(2, page(4)), [.discard(after: 2), .accept(index: 2)],
                       "page 4, already asked for, is awaited rather than abandoned")
        XCTAssertEqual(planner.pageArrived(3, page(0)), [.finish(.allPages(expectedTotal: nil, missingPages: []))])
    }

    func testAPageWithItemsPastAShortPageFailsWhicheverArrivesFirst() {
        // The outcome used to depend on arrival order: page 4 cancelled if page 3 came first.
        for shortFirst in [true, false] {
            var planner = numberWalker(window: 2)
            _ = planner.start()
            _ = planner.pageArrived(0, page(10))
            _ = planner.pageArrived(1, page(10)) // pages 3 and 4 in flight
            let actions = shortFirst ? planner.pageArrived(2, page(4)) + planner.pageArrived(3, page(10))
                                     : planner.pageArrived(3, page(10)) + planner.pageArrived(2, page(4))
            guard case .failed(_, let error)? = actions.ending else { return XCTFail("\(shortFirst): \(actions)") }
            XCTAssertEqual(error.code, .badPage, "\(shortFirst)")
        }
    }

    func testPageNumbersWithoutTotalOrNextEndAtAnEmptyPageOrA404() {
        for notFound in [false, true] {
            var planner = numberWalker(window: 2)
            _ = planner.start()
            _ = planner.pageArrived(0, page(10))
            _ = planner.pageArrived(1, page(10)) // pages 2 and 3 in flight
            let actions = notFound ? planner.pageFailed(2, httpError(404)) : planner.pageArrived(2, page(0))
            XCTAssertEqual(actions, [.discard(after: 2), notFound ? .acceptEmpty(index: 2) : .accept(index: 2)])
            XCTAssertEqual(planner.pageFailed(3, httpError(404)), [.finish(.allPages(expectedTotal: nil, missingPages: []))])
        }
    }

    func testAnEmptyPageBeforeAPageWithItemsIsAHole() {
        var planner = numberWalker(window: 2)
        _ = planner.start()
        _ = planner.pageArrived(0, page(10)) // pages 1 and 2
        XCTAssertEqual(planner.pageArrived(2, page(10)), [.accept(index: 2), .fetch(index: 3, url: "\(base)?page=4")])
        let notFound = httpError(404)
        XCTAssertEqual(planner.pageFailed(1, notFound), [.cancel([3]), .finish(.failed(index: 1, error: notFound))])
    }

    func testAShortFirstPageOfTheRequestedSizeIsTheWholeList() {
        var planner = planner(paging: .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 50))),
                              hasNext: false)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(49)),
                       [.accept(index: 0), .finish(.allPages(expectedTotal: nil, missingPages: []))])
    }

    // MARK: Past the end, and growing lists

    func testA404PastTheRealEndIsAcceptedAsEmptyAndReportedMissing() {
        var planner = planner(window: 10)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 500)) // pages 1...4 in flight
        XCTAssertEqual(planner.pageArrived(1, page(100)), [.accept(index: 1)])
        XCTAssertEqual(planner.pageFailed(4, httpError(404)), [], "whether it is the end shows only at the end")
        XCTAssertEqual(planner.pageFailed(3, httpError(404)), [])
        XCTAssertEqual(planner.pageArrived(2, page(50)),
                       [.accept(index: 2), .acceptEmpty(index: 3), .acceptEmpty(index: 4),
                        .finish(.allPages(expectedTotal: 500, missingPages: [3, 4]))])
    }

    func testA404PastTheRealEndFollowedByEmptyPagesIsStillTheEnd() {
        var planner = planner(window: 10)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 400)) // pages 1...3
        XCTAssertEqual(planner.pageFailed(2, httpError(404)), [])
        XCTAssertEqual(planner.pageArrived(3, page(0)), [.accept(index: 3)])
        XCTAssertEqual(planner.pageArrived(1, page(100)),
                       [.accept(index: 1), .acceptEmpty(index: 2), .finish(.allPages(expectedTotal: 400, missingPages: [2]))])
    }

    func testA404BeforeAPageWithItemsIsAHoleThatFailsTheList() {
        var planner = planner(window: 10)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 400)) // pages 1...3
        let notFound = httpError(404)
        XCTAssertEqual(planner.pageFailed(1, notFound), [])
        XCTAssertEqual(planner.pageArrived(3, page(100)), [.accept(index: 3)])
        XCTAssertEqual(planner.pageArrived(2, page(100)),
                       [.accept(index: 2), .finish(.failed(index: 1, error: notFound))])
    }

    func testA404WithNoLaterPageInFlightAsksForThePageAfterItToTellAHoleFromTheEnd() {
        // A window of one (an adaptive window after a 503): nothing past the 404 is in flight.
        var planner = planner(window: 1)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 400)) // page 2 next
        XCTAssertEqual(planner.pageArrived(1, page(100)).fetches.count, 1, "page 3")
        let notFound = httpError(404)
        XCTAssertEqual(Array(planner.pageFailed(2, notFound).fetches.keys), [3], "page 4: a hole or the end?")
        XCTAssertEqual(planner.pageArrived(3, page(100)), [.accept(index: 3), .finish(.failed(index: 2, error: notFound))],
                       "page 4 has items: page 3 was a hole")
    }

    func testA404OnTheFirstPageIsAFailure() {
        var planner = planner()
        _ = planner.start()
        guard case .failed(0, let error)? = planner.pageFailed(0, httpError(404)).ending else {
            return XCTFail("expected page 0 to fail")
        }
        XCTAssertEqual(error.httpStatus, 404)
    }

    func testA404DuringASequentialWalkIsAFailure() {
        var planner = planner(paging: .next, first: base)
        _ = planner.start()
        _ = planner.pageArrived(0, page(10, next: "\(base)?c=1"))
        XCTAssertEqual(planner.pageFailed(1, httpError(404)), [.finish(.failed(index: 1, error: httpError(404)))])
    }

    func testTheLastPlannedPageNamingANextPageContinuesWithAWalk() {
        var planner = planner(window: 8)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 300)) // pages 1 and 2
        // The last planned page arrives first, naming a page 4: the list grew.
        XCTAssertEqual(planner.pageArrived(2, page(100, next: pageURL(4))), [.accept(index: 2)])
        XCTAssertNil(planner.expectedPages, "the count is no longer known")
        XCTAssertEqual(planner.pageArrived(1, page(100, next: pageURL(3))),
                       [.accept(index: 1), .fetch(index: 3, url: pageURL(4))])
        XCTAssertEqual(planner.mode, .sequential)
        XCTAssertEqual(planner.pageArrived(3, page(20)),
                       [.accept(index: 3), .finish(.allPages(expectedTotal: 300, missingPages: []))])
    }

    // MARK: Failures and stopping

    func testAFailureCancelsLaterPagesWaitsForEarlierOnesThenFinishes() {
        var planner = planner(window: 8)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 1000)) // pages 1...8 in flight
        let failure = httpError(500)
        XCTAssertEqual(planner.pageFailed(4, failure), [.cancel([5, 6, 7, 8])])
        XCTAssertEqual(planner.pageArrived(2, page(100)), [.accept(index: 2)], "no new page is fetched")
        XCTAssertEqual(planner.pageArrived(6, page(100)), [], "a cancelled page is ignored")
        XCTAssertEqual(planner.pageArrived(1, page(100)), [.accept(index: 1)])
        XCTAssertFalse(planner.isFinished)
        XCTAssertEqual(planner.pageArrived(3, page(100)),
                       [.accept(index: 3), .finish(.failed(index: 4, error: failure))])
        XCTAssertTrue(planner.isFinished)
        XCTAssertEqual(planner.pageArrived(9, page(100)), [])
    }

    func testAnEarlierFailureReplacesALaterOne() {
        var planner = planner(window: 8)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 1000))
        XCTAssertEqual(planner.pageFailed(6, httpError(500)), [.cancel([7, 8])])
        XCTAssertEqual(planner.pageFailed(2, httpError(502)), [.cancel([3, 4, 5])])
        XCTAssertEqual(planner.pageArrived(1, page(100)),
                       [.accept(index: 1), .finish(.failed(index: 2, error: httpError(502)))])
    }

    func testAFailingFirstPageFinishesAtOnce() {
        var planner = planner()
        _ = planner.start()
        XCTAssertEqual(planner.pageFailed(0, httpError(401)), [.finish(.failed(index: 0, error: httpError(401)))])
    }

    func testStopCancelsEverythingInFlightAndEndsThePlan() {
        var planner = planner(window: 4)
        _ = planner.start()
        _ = planner.pageArrived(0, page(100, next: pageURL(2), total: 1000))
        _ = planner.pageArrived(2, page(100)) // fetches page 5
        XCTAssertEqual(planner.stop(), [.cancel([1, 3, 4, 5])])
        XCTAssertTrue(planner.isFinished)
        XCTAssertEqual(planner.pageArrived(1, page(100)), [])
        XCTAssertEqual(planner.pageFailed(3, httpError(500)), [])
        XCTAssertEqual(planner.stop(), [])
    }

    func testStopWithNothingInFlightCancelsNothing() {
        var planner = planner()
        _ = planner.start()
        _ = planner.pageArrived(0, page(3, total: 3))
        XCTAssertEqual(planner.stop(), [])
    }

    // MARK: Offsets, page counts and end flags

    func testOffsetsStepByThePageSizeTheServerServed() {
        var planner = planner(paging: .offset(.init(parameter: "offset", first: 0)), first: "\(base)?limit=25&offset=0")
        _ = planner.start()
        let actions = planner.pageArrived(0, page(10, total: 35))
        XCTAssertEqual(actions.fetches, [1: "\(base)?limit=25&offset=10", 2: "\(base)?limit=25&offset=20",
                                         3: "\(base)?limit=25&offset=30"])
        XCTAssertEqual(planner.expectedPages, 4)
    }

    func testAPageCountWithoutATotalPlansThePagesInParallel() {
        var planner = planner(window: 8)
        _ = planner.start()
        var first = page(100)
        first.pageCount = 3
        XCTAssertEqual(planner.pageArrived(0, first).fetches.keys.sorted(), [1, 2])
        XCTAssertEqual(planner.mode, .parallel(pageCount: 3))
        var linked = makePlanner(window: 8)
        _ = linked.start()
        var fromLast = page(100)
        fromLast.lastPosition = 4 // Link rel="last" names page 4, numbers from 1
        XCTAssertEqual(linked.pageArrived(0, fromLast).fetches.keys.sorted(), [1, 2, 3])
    }

    func testAHostileTotalIsAPageLimitFailureNotATrap() {
        var planner = planner(maxPages: 10_000)
        _ = planner.start()
        let actions = planner.pageArrived(0, page(2, total: Int.max))
        guard case .failed(_, let error)? = actions.ending else { return XCTFail("\(actions)") }
        XCTAssertEqual(error.code, .pageLimit)
        var counted = makePlanner()
        _ = counted.start()
        var hostile = page(2)
        hostile.lastPosition = Int.max
        guard case .failed(_, let error)? = counted.pageArrived(0, hostile).ending else { return XCTFail("no failure") }
        XCTAssertEqual(error.code, .pageLimit)
    }

    func testHasMoreWithoutALinkKeepsASpeculativeWalkGoingAndFalseEndsIt() {
        var planner = planner(paging: .pageNumber(.init(parameter: "page", first: 1)), window: 2, first: "\(base)?page=1")
        _ = planner.start()
        var more = page(10)
        more.more = true
        XCTAssertEqual(planner.pageArrived(0, more).fetches, [1: "\(base)?page=2", 2: "\(base)?page=3"])
        XCTAssertEqual(planner.mode, .speculative)
        var last = page(10)
        last.more = false
        let actions = planner.pageArrived(1, last)
        XCTAssertTrue(actions.contains(.cancel([2])), "\(actions)")
        XCTAssertEqual(actions.ending, .allPages(expectedTotal: nil, missingPages: []))
    }

    func testASequentialPageThatSaysMoreButNamesNoNextPageIsABadPage() {
        var planner = planner(paging: .next, first: base)
        _ = planner.start()
        var more = page(10)
        more.more = true
        guard case .failed(let index, let error)? = planner.pageArrived(0, more).ending else { return XCTFail("no failure") }
        XCTAssertEqual(index, 1)
        XCTAssertEqual(error.code, .badPage)
    }

    func testNothingIsRequestedAfterA404InTheMiddleOfAListWithATotal() {
        // 0.2.0 went on requesting every remaining page: 11-12 requests after the 404 of a
        // 20-page list.
        for laterPageHasItems in [false, true] {
            var planner = planner(window: 4)
            _ = planner.start()
            _ = planner.pageArrived(0, page(10, total: 200)) // pages 1-4 in flight
            var fetched = 0
            fetched += planner.pageArrived(1, page(10)).fetches.count    // page 5 goes out
            let afterNotFound = planner.pageFailed(2, httpError(404))
            XCTAssertEqual(afterNotFound.fetches.count, 0, "nothing more after the 404")
            fetched += planner.pageArrived(3, laterPageHasItems ? page(10) : page(0)).fetches.count
            let last = planner.pageFailed(4, httpError(404)) + planner.pageFailed(5, httpError(404))
            fetched += last.fetches.count
            XCTAssertEqual(fetched, 1)
            if laterPageHasItems {
                guard case .failed(let index, let error)? = last.ending else { return XCTFail("\(last)") }
                XCTAssertEqual(index, 2)
                XCTAssertEqual(error.httpStatus, 404)
            } else {
                guard case .allPages(let total, let missing)? = last.ending else { return XCTFail("\(last)") }
                XCTAssertEqual(total, 200)
                XCTAssertEqual(missing, [2, 4, 5])
            }
        }
    }

    // MARK: Pages asked for ahead of page one

    func testAddressablePagesGoOutWithPageOneAndStandWhenThePlanAsksForThem() {
        var planner = planner(window: 4, pagesAhead: 4)
        XCTAssertEqual(planner.start().fetches, [0: pageURL(1, "&per_page=500"), 1: pageURL(2, "&per_page=500"),
                                                 2: pageURL(3, "&per_page=500"), 3: pageURL(4, "&per_page=500")])
        // The server's next link lists the parameters in another order: the same page.
        let actions = planner.pageArrived(0, page(100, next: "\(base)?per_page=500&page=2", total: 1000))
        XCTAssertEqual(actions, [.accept(index: 0), .fetch(index: 4, url: "\(base)?per_page=500&page=5")],
                       "pages 2-4 stand; the window has room for page 5")
        XCTAssertEqual(planner.mode, .parallel(pageCount: 10))
        for index in 1...3 { XCTAssertEqual(planner.pageArrived(index, page(100)), [.accept(index: index)] + [.fetch(index: 4 + index, url: "\(base)?per_page=500&page=\(5 + index)")]) }
    }

    func testPagesAheadStandThoughTheWindowShrankBeforePageOneAnswered() {
        var planner = planner(window: 4, pagesAhead: 4)
        _ = planner.start()
        planner.window = 2 // a page ahead was refused: the window shrank
        let actions = planner.pageArrived(0, page(100, total: 1000))
        XCTAssertEqual(actions, [.accept(index: 0)], "pages 2-4 stand, none asked for again, none added")
        XCTAssertEqual(planner.pageArrived(1, page(100)), [.accept(index: 1)], "3 in flight: over the window of 2")
        XCTAssertEqual(planner.pageArrived(2, page(100)), [.accept(index: 2), .fetch(index: 4, url: pageURL(5, "&per_page=500"))])
    }

    func testPagesAheadPastTheEndOfAShortListAreAbandoned() {
        var planner = planner(window: 4, pagesAhead: 4)
        _ = planner.start()
        let actions = planner.pageArrived(0, page(100, total: 150))
        XCTAssertEqual(actions, [.accept(index: 0), .cancel([2, 3])])
        XCTAssertEqual(planner.pageArrived(1, page(50)), [.accept(index: 1), .finish(.allPages(expectedTotal: 150, missingPages: []))])
    }

    func testAListOnOnePageAbandonsEveryPageAheadAndFinishes() {
        var planner = planner(window: 4, pagesAhead: 4)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(7, total: 7)),
                       [.accept(index: 0), .cancel([1, 2, 3]), .finish(.allPages(expectedTotal: 7, missingPages: []))])
        XCTAssertEqual(planner.pageArrived(2, page(0)), [], "an abandoned page changes nothing")
    }

    func testOffsetsAheadOnTheSizeAskedForAreReplannedOnTheSizeServed() {
        let offsets = Paging.offset(.init(parameter: "offset", first: 0, size: .init(parameter: "limit", value: 100)))
        var planner = planner(paging: offsets, window: 3, first: "\(base)?offset=0&limit=100", pagesAhead: 3)
        XCTAssertEqual(planner.start().fetches, [0: "\(base)?offset=0&limit=100", 1: "\(base)?offset=100&limit=100",
                                                 2: "\(base)?offset=200&limit=100"])
        // The server serves 50: the pages asked for ahead would skip items 50-99 and 150-199.
        let actions = planner.pageArrived(0, page(50, total: 400))
        XCTAssertEqual(actions, [.accept(index: 0), .cancel([1, 2]),
                                 .fetch(index: 1, url: "\(base)?offset=50&limit=100"),
                                 .fetch(index: 2, url: "\(base)?offset=100&limit=100"),
                                 .fetch(index: 3, url: "\(base)?offset=150&limit=100")])
        XCTAssertEqual(planner.mode, .parallel(pageCount: 8))
    }

    func testWithoutASizeSentOffsetsWaitForPageOne() {
        let offsets = Paging.offset(.init(parameter: "offset", first: 0, size: .init(parameter: "limit", value: nil)))
        var planner = planner(paging: offsets, window: 3, first: "\(base)?offset=0", pagesAhead: 3)
        XCTAssertEqual(planner.start().fetches.count, 1)
    }

    func testNextLinksAndCursorsWaitForPageOne() {
        var planner = planner(paging: .next, window: 4, first: base, pagesAhead: 4)
        XCTAssertEqual(planner.start().fetches.count, 1)
    }

    func testPagesAheadStayWithinThePageCapTheBudgetAndTheGate() {
        var capped = planner(window: 8, maxPages: 3, pagesAhead: 8)
        XCTAssertEqual(capped.start().fetches.count, 3)
        var budgeted = PagePlanner(firstURL: "\(base)?page=1&per_page=500", paging: pageNumbers, window: 8, maxPages: 100,
                                   pageBudget: 2, pagesAhead: 8)
        XCTAssertEqual(budgeted.start().fetches.count, 2)
        var gated = PagePlanner(firstURL: "\(base)?page=1&per_page=500", paging: pageNumbers, window: 8, maxPages: 100,
                                pageGate: 1, pagesAhead: 8)
        XCTAssertEqual(gated.start().fetches.count, 1)
    }

    func testAPageAheadThatFailsAfterPageOneEndedTheListIsIgnoredButBeforeTheEndItFails() {
        // Past the end (the plan abandoned it): nothing.
        var short = planner(window: 4, pagesAhead: 4)
        _ = short.start()
        _ = short.pageArrived(0, page(100, total: 150))
        XCTAssertEqual(short.pageFailed(3, httpError(500)), [])
        // Within the list: the failure it always was.
        var long = planner(window: 4, pagesAhead: 4)
        _ = long.start()
        _ = long.pageArrived(0, page(100, total: 1000))
        guard case .failed(let index, _)? = (long.pageFailed(2, httpError(500)) + long.pageArrived(1, page(100))).ending else {
            return XCTFail("no failure")
        }
        XCTAssertEqual(index, 2)
    }
}
