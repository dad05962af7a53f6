import Foundation
import XCTest
@testable import Sheaf

let scriptedBase = "https://api.example.com"
let scriptedList = "https://api.example.com/v1/things"
let scriptedToken = "s3cr3t-T0KEN-value"

/// A client of `scriptedBase` with `scriptedToken`, quick retries, and `configure` applied.
func scriptedClient(_ transport: ScriptedTransport,
                    _ configure: (inout ClientConfiguration) -> Void = { _ in }) throws -> SheafClient {
    var configuration = ClientConfiguration()
    configuration.retry.baseDelayMilliseconds = 0
    // Plans are tested within a window of a fixed size (the adaptive window has tests of its own).
    configuration.adaptsWindow = false
    configure(&configuration)
    return try SheafClient(baseURL: scriptedBase, bearerToken: scriptedToken, transport: transport,
                           configuration: configuration)
}

/// A client of `scriptedBase` that sends no credential, configured as `scriptedClient`.
func anonymousClient(_ transport: ScriptedTransport) throws -> SheafClient {
    var configuration = ClientConfiguration()
    configuration.retry.baseDelayMilliseconds = 0
    configuration.adaptsWindow = false
    return try SheafClient(baseURL: scriptedBase, transport: transport, configuration: configuration)
}

/// The anchor convention: {"items","next_page","total"}, paged by `page` and `per_page`.
func anchorList(_ path: String = "/v1/things", pageSize: Int = 10) -> ListDescription {
    var description = ListDescription(path: path)
    description.signals[.items] = .body(JSONPointer("/items")!)
    description.signals[.next] = .body(JSONPointer("/next_page")!)
    description.signals[.total] = .body(JSONPointer("/total")!)
    description.paging = .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: pageSize)))
    return description.pinningTheRest()
}

/// A list walked by next links only: {"items","next_page"}.
func linkedList(_ path: String = "/v1/things") -> ListDescription {
    var description = ListDescription(path: path)
    description.signals[.items] = .body(JSONPointer("/items")!)
    description.signals[.next] = .body(JSONPointer("/next_page")!)
    description.paging = .next
    return description.pinningTheRest()
}

extension ListDescription {
    /// The description with every signal it does not name read from nowhere (nothing detected).
    func pinningTheRest() -> ListDescription {
        var description = self
        for signal in Signal.allCases where description.signals[signal] == nil { description.signals[signal] = SignalSource.none }
        if description.paging == .detect { description.paging = .next }
        return description
    }
}

func scriptedPage(_ number: Int, size: Int = 10) -> String {
    "\(scriptedList)?page=\(number)&per_page=\(size)"
}

/// Collects the snapshots a run delivers.
final class SnapshotLog: Sendable {
    private let snapshots = Shared<[Snapshot]>([])
    private let finished = Shared(false)
    private let lateCallbacks = Shared(0)
    private let answer: @Sendable (Int) -> Bool

    /// - Parameter answer: what the callback returns for the n-th snapshot (from 1).
    init(answer: @escaping @Sendable (Int) -> Bool = { _ in true }) {
        self.answer = answer
    }

    var callback: @Sendable (Snapshot) -> Bool {
        { [self] snapshot in
            if finished.value { lateCallbacks.update { $0 += 1 } }
            let count = snapshots.update { $0.append(snapshot); return $0.count }
            return answer(count)
        }
    }

    var all: [Snapshot] { snapshots.value }
    /// The ids of every delta, concatenated.
    var ids: [Int] { all.flatMap { itemIDs($0.delta.json) } }
    /// Marks wait() as returned: any callback from now on is counted as late.
    func markFinished() { finished.update { $0 = true } }
    var callbacksAfterFinish: Int { lateCallbacks.value }
}

/// Runs `list` through `transport`, logging its snapshots, and checks it ends complete.
private func runToTheEnd(_ list: ListDescription, through transport: ScriptedTransport, window: Int,
                         file: StaticString = #filePath, line: UInt = #line) throws -> (ListRun, SnapshotLog) {
    let log = SnapshotLog()
    let run = try scriptedClient(transport) { $0.window = window }.makeList(list, onSnapshot: log.callback)
    try run.start()
    XCTAssertEqual(outcome(of: run, file: file, line: line), .complete, file: file, line: line)
    log.markFinished()
    return (run, log)
}

final class ListRunTests: XCTestCase {
    // MARK: Complete lists

    /// `wait()` returns once the transport has seen the cancel of every request in flight
    /// (issue 47: the cancels were made after the lock was released, the end queued before them,
    /// so `wait()` could return while a slow transport still had them).
    func testACancelledListEndsOnlyAfterTheTransportSawEveryCancel() throws {
        let transport = ScriptedTransport()
        transport.cancelMilliseconds.store(40, ordering: .relaxed)
        transport.on(scriptedPage(1)) { request, _ in .json(FakeAnchorAPI(count: 200).body(request.url)) }
        transport.otherwise { _, _ in ScriptedReply(result: nil) } // never answered
        let run = try scriptedClient(transport).makeList(anchorList())
        try run.start()
        let deadline = Date().addingTimeInterval(5)
        while transport.outstanding < 4, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        let inFlight = transport.outstanding
        XCTAssertGreaterThanOrEqual(inFlight, 4)
        // Another thread waits, and looks at the transport the moment wait() returns.
        let seenAtTheEnd = Shared<Int?>(nil)
        let ended = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? run.wait()
            seenAtTheEnd.update { $0 = transport.outstanding }
            ended.signal()
        }
        Thread.sleep(forTimeInterval: 0.05)
        run.cancel()
        XCTAssertEqual(ended.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(seenAtTheEnd.value, 0, "every request cancelled at the transport before wait() returned")
        XCTAssertGreaterThanOrEqual(transport.cancelledCount, inFlight, "the requests in flight were cancelled, not answered")
    }

    func testACompleteListArrivesInOrderWithSnapshotsThatOnlyGrow() throws {
        for answersLater in [false, true] {
            let transport = ScriptedTransport()
            let api = FakeAnchorAPI(count: 95)
            transport.on(scriptedList) { request, _ in
                answersLater ? api.reply(request).after(Int.random(in: 0...8)) : api.reply(request)
            }
            let (run, log) = try runToTheEnd(anchorList(), through: transport, window: 4)
            XCTAssertEqual(log.ids, Array(0..<95), "answers later: \(answersLater)")
            XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<95))
            var total = 0
            var pages = 0
            for snapshot in log.all {
                XCTAssertGreaterThan(snapshot.delta.pages, pages, "every snapshot adds pages")
                total += snapshot.delta.items
                XCTAssertEqual(snapshot.delta.totalItems, total)
                XCTAssertEqual(snapshot.expectedItems, 95)
                XCTAssertEqual(snapshot.expectedPages, 10)
                pages = snapshot.delta.pages
            }
            XCTAssertEqual(pages, 10)
            XCTAssertEqual(transport.requests.count, 10)
            XCTAssertEqual(Set(transport.requests.map(\.url)), Set((1...10).map { scriptedPage($0) }))
        }
    }

    func testPagesFinishingAtTheSameMomentNeverLoseTheirItems() throws {
        // Regression: a page's planning and its assembly once took the lock twice, so the last
        // page could end the list between another page's decision and its items being added.
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 200)
        transport.on(scriptedList) { request, _ in api.reply(request).after(0) }
        let client = try scriptedClient(transport) { $0.window = 8 }
        for attempt in 0..<150 {
            let run = try client.makeList(anchorList(pageSize: 10))
            try run.start()
            XCTAssertEqual(outcome(of: run), .complete, "attempt \(attempt)")
            XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<200), "attempt \(attempt)")
        }
    }

    // MARK: Page numbers without a total (speculative)

    func testWithoutATotalNumberedPagesAreFetchedAWindowAheadAndNothingPastTheEndIsKept() throws {
        for answersLater in [false, true] {
            let transport = ScriptedTransport()
            let api = FakeAnchorAPI(count: 195, reportsTotal: false)
            transport.on(scriptedList) { request, _ in
                answersLater ? api.reply(request).after(Int.random(in: 1...8)) : api.reply(request).after(2)
            }
            let (run, log) = try runToTheEnd(anchorList(), through: transport, window: 4)
            XCTAssertEqual(log.ids, Array(0..<195), "answers later: \(answersLater)")
            XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<195))
            XCTAssertEqual(log.all.last?.delta.pages, 20, "no page past the end is counted")
            XCTAssertEqual(log.all.last?.expectedPages, 20)
            XCTAssertEqual(transport.maxOutstanding, 4)
            // Past the last page, at most a window of requests is wasted.
            XCTAssertGreaterThanOrEqual(transport.requests.count, 20)
            XCTAssertLessThanOrEqual(transport.requests.count, 24)
        }
    }

    func testAServerRepeatingItsLastPageForEveryLaterNumberGivesEachItemOnce() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 35, reportsTotal: false)
        // Page numbers past the end answer the last page again (some servers clamp the number).
        transport.on(scriptedList) { request, _ in
            let number = FakeAnchorAPI.query(request.url, "page").flatMap { Int($0) } ?? 1
            return .json(api.body(scriptedPage(min(number, 4)))).after(number > 4 ? 0 : 5)
        }
        let (json, outcome) = try scriptedClient(transport) { $0.window = 8 }.fetchAll(anchorList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<35))
    }

    func testNumberedPagesHandingOverToACursorAreWalkedOnFromIt() throws {
        let transport = ScriptedTransport()
        // Pages 1 and 2 are numbered; page 2 names a cursor; page numbers 3+ are empty.
        transport.on(scriptedList) { request, _ in
            switch FakeAnchorAPI.query(request.url, "page") ?? FakeAnchorAPI.query(request.url, "cursor") {
            case "1": return .json(#"{"items":[0,1],"next_page":"?page=2&per_page=10"}"#).after(3)
            case "2": return .json(#"{"items":[2,3],"next_page":"?cursor=c1"}"#).after(6)
            case "c1": return .json(#"{"items":[4],"next_page":"?cursor=c2"}"#)
            case "c2": return .json(#"{"items":[5],"next_page":null}"#)
            default: return .json(#"{"items":[99],"next_page":null}"#)
            }
        }
        let (json, outcome) = try scriptedClient(transport) { $0.window = 4 }.fetchAll(anchorList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(String(decoding: json, as: UTF8.self), "[0,1,2,3,4,5]")
    }

    func testTheSnapshotCallbackRunsAtTheSameStackDepthHoweverLongTheStream() throws {
        // Regression: the callback, kept in a Mutex and read through withLock, gained a layer of
        // reabstraction thunks per snapshot: quadratic time, then a stack overflow near 100,000.
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 1500, cap: 1)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let depths = Shared<[Int]>([])
        let run = try scriptedClient(transport) { $0.window = 1 }
            .makeList(anchorList(pageSize: 1), keepsItems: false) { _ in
                depths.update { $0.append(Thread.callStackReturnAddresses.count) }
                return true
            }
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        let seen = depths.update { $0 }
        XCTAssertEqual(seen.count, 1500)
        XCTAssertLessThanOrEqual(seen.max() ?? 0, (seen.first ?? 0) + 10, "the stack grew with the stream")
    }

    func testASlowSnapshotConsumerHoldsBackTheFetching() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 300)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let runBox = Shared<ListRun?>(nil)
        let ahead = Shared(0)
        let delivered = Shared(0)
        let run = try scriptedClient(transport) { $0.window = 2 }.makeList(anchorList(), keepsItems: false) { snapshot in
            Thread.sleep(forTimeInterval: 0.005)
            delivered.update { $0 = snapshot.delta.pages }
            let made = runBox.update { $0?.requestsMade ?? 0 }
            ahead.update { $0 = max($0, made - snapshot.delta.pages) }
            return true
        }
        runBox.update { $0 = run }
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(delivered.update { $0 }, 30)
        // Answers are instant, so without backpressure all 30 pages would be requested before
        // the third snapshot; with it, requests stay within a few windows of the deliveries.
        XCTAssertLessThanOrEqual(ahead.update { $0 }, 8)
        XCTAssertEqual(run.requestsMade, 30)
        XCTAssertEqual(run.requestsInFlight, 0)
        runBox.update { $0 = nil }
    }

    func testEveryRequestCarriesTheTokenAndAsksForJSON() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 25)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        _ = try scriptedClient(transport).fetchAll(anchorList())
        XCTAssertEqual((1...3).map { transport.requestCount(scriptedPage($0)) }, [1, 1, 1])
        for request in transport.requests {
            XCTAssertEqual(request.method, "GET")
            XCTAssertEqual(request.headers.first(named: "authorization"), "Bearer \(scriptedToken)")
            XCTAssertEqual(request.headers.first(named: "Accept"), "application/json")
            XCTAssertEqual(request.headers.first(named: "User-Agent"), "sheaf/\(SheafVersion.string)")
        }
    }

    func testFetchAllReturnsTheWholeListAsOneArray() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 31)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<31))
    }

    func testTheListQueryAndPageParametersMakeTheFirstURL() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .json(#"{"items":[],"next_page":null,"total":0}"#) }
        var description = anchorList("/v1/things?sort=name", pageSize: 25)
        description.query = [("filter", "a b&c")]
        XCTAssertEqual(try scriptedClient(transport).fetchAll(description).outcome, .complete)
        XCTAssertEqual(transport.requests.first?.url, "\(scriptedList)?sort=name&filter=a%20b%26c&page=1&per_page=25")
    }

    // MARK: Pages asked for ahead of page one

    func testAMissingTokenCostsTwoRequestsOnAnOriginThatHasNotAnsweredAPageOne() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in ScriptedReply.status(401).after(50) }
        let (_, outcome) = try anonymousClient(transport).fetchAll(anchorList())
        XCTAssertEqual(outcome.error?.code, .http)
        XCTAssertEqual(transport.requests.map(\.url).sorted(), [scriptedPage(1), scriptedPage(2)],
                       "page one and page two, not a window of refused requests")
    }

    func testWithoutATokenTheNextListSendsAWindowAheadOfPageOneOnceTheOriginHasAnsweredOne() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 200)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(1) ? api.reply(request).after(100) : api.reply(request)
        }
        let client = try anonymousClient(transport)
        let (_, first) = try client.fetchAll(anchorList())
        XCTAssertEqual(first, .complete)
        XCTAssertEqual(transport.requests.prefix(2).map(\.url).sorted(), [scriptedPage(1), scriptedPage(2)],
                       "the first list on the origin: two pages before page one answers")
        let before = transport.requests.count
        let (json, second) = try client.fetchAll(anchorList())
        XCTAssertEqual(second, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<200))
        XCTAssertEqual(Set(transport.requests.dropFirst(before).prefix(8).map(\.url)), Set((1...8).map { scriptedPage($0) }),
                       "the next list: the window went out before its page one answered")
    }

    func testPagesAheadThatAnswerBeforePageOneAreHeldAndTheListStaysInOrder() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 200)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(1) ? api.reply(request).after(100) : api.reply(request)
        }
        let log = SnapshotLog()
        let run = try scriptedClient(transport).makeList(anchorList(), onSnapshot: log.callback)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(log.ids, Array(0..<200), "the snapshots grow in list order")
        XCTAssertEqual(Set(transport.requests.prefix(8).map(\.url)), Set((1...8).map { scriptedPage($0) }),
                       "the window went out before page one answered")
        XCTAssertEqual(transport.requests.map(\.url).sorted(), (1...20).map { scriptedPage($0) }.sorted(), "each page once")
    }

    func testARetryPastTheRequestBudgetStopsTheListAfterThePagesBeforeIt() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 100)
        transport.on(scriptedList) { request, attempt in
            request.url == scriptedPage(3) && attempt == 1 ? .status(503) : api.reply(request)
        }
        var list = anchorList()
        list.maxRequests = 4
        let log = SnapshotLog()
        let run = try scriptedClient(transport).makeList(list, onSnapshot: log.callback)
        try run.start()
        XCTAssertEqual(outcome(of: run), .finished(.requestBudget))
        XCTAssertEqual(log.ids, Array(0..<20), "the pages before the one that could not be retried")
        XCTAssertLessThanOrEqual(transport.requests.count, 4, "never past the budget (page 4 may be let go before it is sent)")
        XCTAssertEqual(run.resumeToken()?.point.url, scriptedPage(3), "the list goes on at that page")
    }

    func testABudgetStopOfAPageAheadOfPageOneIsIgnoredWhenTheListHasNoSuchPage() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 15)
        transport.on(scriptedList) { request, _ in
            switch request.url {
            case scriptedPage(1): api.reply(request).after(100)
            case scriptedPage(3): .status(503)
            default: api.reply(request)
            }
        }
        var list = anchorList()
        list.maxRequests = 4
        let (json, outcome) = try scriptedClient(transport).fetchAll(list)
        XCTAssertEqual(outcome, .complete, "page 3's retry, refused by the budget, is of a page the list does not have")
        XCTAssertEqual(itemIDs(json), Array(0..<15))
    }

    /// The anchor list's pages, each padded past what a page ahead of page one may bring.
    private func paddedPages(_ api: FakeAnchorAPI, slow: @escaping @Sendable (String) -> Bool) -> ScriptedTransport {
        let transport = ScriptedTransport()
        let padding = String(repeating: "x", count: RunStart.aheadBodyCap(pagesAhead: 8))
        transport.on(scriptedList) { request, _ in
            let body = String(api.body(request.url).dropLast()) + #","pad":""# + padding + #""}"#
            return slow(request.url) ? .json(body).after(100) : .json(body)
        }
        return transport
    }

    func testPagesAheadOfPageOneMayBringLittleAndOneTooBigIsAskedForAgainOnceThePlanNeedsIt() throws {
        let transport = paddedPages(FakeAnchorAPI(count: 30)) { $0 == scriptedPage(1) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<30))
        let first = transport.requests.prefix(8)
        XCTAssertEqual(first.filter { $0.url != scriptedPage(1) }.map(\.maxBodyBytes),
                       Array(repeating: RunStart.aheadBodyCap(pagesAhead: 8), count: 7), "a window of pages ahead holds 7 x 4 MiB at most")
        XCTAssertEqual(first.first { $0.url == scriptedPage(1) }?.maxBodyBytes, ClientConfiguration().maxBodyBytes)
        XCTAssertEqual(transport.requestCount(scriptedPage(2)), 2, "asked for again, without the cap")
        XCTAssertEqual(transport.requestCount(scriptedPage(3)), 2)
        XCTAssertEqual(transport.requestCount(scriptedPage(4)), 1, "past the end page one shows: not asked for again")
    }

    func testAPageAheadThatComesBackTooBigAfterPageOneWasPlannedIsAskedForAgainAtOnce() throws {
        let transport = paddedPages(FakeAnchorAPI(count: 30)) { $0 != scriptedPage(1) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<30))
        XCTAssertEqual(transport.requestCount(scriptedPage(2)), 2)
        XCTAssertEqual(transport.requests.filter { $0.url == scriptedPage(2) }.map(\.maxBodyBytes),
                       [RunStart.aheadBodyCap(pagesAhead: 8), ClientConfiguration().maxBodyBytes])
    }

    func testTheWindowHoldsNoMoreBodiesThanOneBodyMayBe() throws {
        // Pages of about 300 KB under a body cap of 1 MiB: three in flight, not the window of 8.
        let api = FakeAnchorAPI(count: 200)
        let padding = String(repeating: "x", count: 300_000)
        let transport = ScriptedTransport()
        transport.on(scriptedList) { request, _ in
            .json(String(api.body(request.url).dropLast()) + #","pad":""# + padding + #""}"#).after(10)
        }
        let client = try scriptedClient(transport) { $0.maxBodyBytes = 1 << 20 }
        let (json, outcome) = try client.fetchAll(ListDescription(path: "/v1/things?per_page=10"))
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<200))
        XCTAssertEqual(transport.maxOutstanding, 3)
    }

    func testAListShorterThanTheWindowIgnoresWhatThePagesAheadAnswered() throws {
        for status in [200, 404, 500] {
            let transport = ScriptedTransport()
            let api = FakeAnchorAPI(count: 15)
            transport.on(scriptedList) { request, _ in
                switch request.url {
                case scriptedPage(1): api.reply(request).after(50)
                case scriptedPage(2): api.reply(request)
                default: status == 200 ? api.reply(request) : .status(status)
                }
            }
            let (json, outcome) = try scriptedClient(transport) { $0.retry.maxAttempts = 1 }.fetchAll(anchorList())
            XCTAssertEqual(outcome, .complete, "pages past the end answered \(status)")
            XCTAssertEqual(itemIDs(json), Array(0..<15))
        }
    }

    func testPagesAheadOfADetectedListAreReadTheWayPageOneIsRead() throws {
        // Paging given, items left to detect: pages that answer first wait for page one's shape.
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 45)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(1) ? api.reply(request).after(50) : api.reply(request)
        }
        var description = ListDescription(path: "/v1/things")
        description.paging = .pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 10)))
        let (json, outcome) = try scriptedClient(transport).fetchAll(description)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<45))
    }

    func testALinkedListIsWalkedAndRelativeNextLinksResolve() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in .json(#"{"items":[{"id":0},{"id":1}],"next_page":"?cursor=b"}"#) }
        transport.on("\(scriptedList)?cursor=b") { _, _ in .json(#"{"items":[{"id":2}],"next_page":"/v1/things?cursor=c"}"#) }
        transport.on("\(scriptedList)?cursor=c") { _, _ in .json(#"{"items":[{"id":3}],"next_page":null}"#) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(linkedList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), [0, 1, 2, 3])
        XCTAssertEqual(transport.maxOutstanding, 1)
    }

    func testTheServersPageSizeCapIsUsedToPlanThePages() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 250, cap: 100)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList(pageSize: 500))
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<250))
        let asked = transport.requests.map(\.url)
        XCTAssertEqual((1...3).map { page in asked.filter { $0 == "\(scriptedList)?page=\(page)&per_page=500" }.count }, [1, 1, 1],
                       "the server's next link keeps asking for 500; it serves 100")
        XCTAssertLessThanOrEqual(asked.count, ClientConfiguration().window, "only the pages asked for ahead of page one")
    }

    func testDuplicatesAcrossPagesAreDroppedWhenTheListHasAnIdentity() throws {
        let transport = ScriptedTransport()
        // Each page after the first repeats the previous page's last item (a list that shifted).
        transport.on(scriptedList) { request, _ in
            let page = Int(FakeAnchorAPI.query(request.url, "page")!)!
            let ids = Array(((page - 1) * 10)..<(page * 10))
            let shown = page > 1 ? [ids[0] - 1] + ids : ids
            let next = page < 4 ? "\"\(scriptedPage(page + 1))\"" : "null"
            return .json(#"{"items":\#(FakeAnchorAPI.itemsJSON(shown)),"next_page":\#(next),"total":40}"#)
        }
        var description = anchorList()
        description.signals[.identity] = .item(JSONPointer("/id")!)
        let (json, outcome) = try scriptedClient(transport).fetchAll(description)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<40))
    }

    func testInsideACallbackThePrefixEndsWithTheSnapshotBeingDelivered() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 64)
        transport.on(scriptedList) { request, _ in api.reply(request).after(Int.random(in: 0...3)) }
        let holder = Shared<ListRun?>(nil)
        let delivered = Shared<[Int]>([])
        let mismatches = Shared<[String]>([])
        let run = try scriptedClient(transport) { $0.window = 4 }.makeList(anchorList()) { snapshot in
            let soFar = delivered.update { $0 += itemIDs(snapshot.delta.json); return $0 }
            let prefix = holder.value.map { itemIDs($0.prefixJSON()) } ?? []
            if prefix != soFar { mismatches.update { $0.append("prefix \(prefix.count) items, delivered \(soFar.count)") } }
            return true
        }
        holder.update { $0 = run }
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        holder.update { $0 = nil }
        XCTAssertEqual(mismatches.value, [])
        XCTAssertEqual(delivered.value, Array(0..<64))
    }

    func testWithoutKeepingItemsTheSnapshotsStillCarryEveryItem() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 42)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let log = SnapshotLog()
        let run = try scriptedClient(transport).makeList(anchorList(), keepsItems: false, onSnapshot: log.callback)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(log.ids, Array(0..<42))
        XCTAssertEqual(String(decoding: run.prefixJSON(), as: UTF8.self), "[]")
    }

    // MARK: The window

    func testTheWindowIsFilledButNeverExceeded() throws {
        for window in [1, 5] {
            let transport = ScriptedTransport(delayMilliseconds: 5)
            let api = FakeAnchorAPI(count: 400)
            transport.on(scriptedList) { request, _ in api.reply(request).after(5) }
            let (json, outcome) = try scriptedClient(transport) { $0.window = window }.fetchAll(anchorList())
            XCTAssertEqual(outcome, .complete)
            XCTAssertEqual(itemIDs(json).count, 400)
            XCTAssertEqual(transport.maxOutstanding, window)
        }
    }

    // MARK: Retries

    func testTransientFailuresAreRetriedUntilTheySucceed() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 50)
        transport.on(scriptedList) { request, attempt in
            switch (request.url, attempt) {
            case (scriptedPage(3), 1...2): return .status(503, body: #"{"error":"busy"}"#)
            case (scriptedPage(4), 1): return .status(429)
            case (scriptedPage(5), 1): return .failure(.timeout, "no answer in time")
            case (scriptedPage(2), 1): return .failure(.connect, "connection reset").after(1)
            default: return api.reply(request)
            }
        }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), Array(0..<50))
        XCTAssertEqual((1...5).map { transport.requestCount(scriptedPage($0)) }, [1, 2, 3, 2, 2])
    }

    func testRetriesStopAfterTheLastAttemptWithTheLastStatus() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 30)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(2) ? .status(503, body: #"{"error":"still busy"}"#) : api.reply(request)
        }
        let result = try scriptedClient(transport) { $0.retry.maxAttempts = 3 }.fetchAll(anchorList())
        let error = try XCTUnwrap(result.outcome.error)
        XCTAssertEqual(error.code, .http)
        XCTAssertEqual(error.httpStatus, 503)
        XCTAssertEqual(error.url, scriptedPage(2))
        XCTAssertTrue(error.message.contains("after 3 attempts"), error.message)
        XCTAssertTrue(error.message.contains("still busy"), "the server's own error is quoted: \(error.message)")
        XCTAssertEqual(error.bodyExcerpt, #"{"error":"still busy"}"#)
        XCTAssertEqual(transport.requestCount(scriptedPage(2)), 3)
        XCTAssertEqual(itemIDs(result.json), Array(0..<10), "the page before the failure is kept")
    }

    func testTransportFailuresThatAreNotTransientAreNotRetried() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .failure(.dns, "no such host") }
        let outcome = try scriptedClient(transport).fetchAll(anchorList()).outcome
        XCTAssertEqual(outcome.error?.code, .transport)
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testNotImplementedIsNotRetried() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 30)
        transport.on(scriptedList) { request, _ in request.url == scriptedPage(2) ? .status(501) : api.reply(request) }
        let outcome = try scriptedClient(transport).fetchAll(anchorList()).outcome
        XCTAssertEqual(outcome.error?.code, .http)
        XCTAssertEqual(outcome.error?.httpStatus, 501)
        XCTAssertEqual(transport.requestCount(scriptedPage(2)), 1)
    }

    func testNotFoundOnTheFirstPageIsNotRetried() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .status(404, body: #"{"detail":"Not found."}"#) }
        let outcome = try scriptedClient(transport).fetchAll(anchorList()).outcome
        XCTAssertEqual(outcome.error?.code, .http)
        XCTAssertEqual(outcome.error?.httpStatus, 404)
        XCTAssertTrue(outcome.error?.message.contains("detail: Not found.") ?? false, "\(String(describing: outcome.error))")
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testA404PastTheRealEndKeepsEveryOtherPageAndReportsTheListIncomplete() throws {
        let transport = ScriptedTransport()
        // The total promises 60 items; the list really has 45, and page 6 does not exist.
        let api = FakeAnchorAPI(count: 45, claimedTotal: 60)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(6) ? .status(404, body: #"{"error":"no such page"}"#) : api.reply(request)
        }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        let error = try XCTUnwrap(outcome.error)
        XCTAssertEqual(error.code, .incomplete)
        XCTAssertTrue(error.message.contains("60") && error.message.contains("45"), error.message)
        XCTAssertTrue(error.message.contains("pages 6 answered 404"), error.message)
        XCTAssertEqual(itemIDs(json), Array(0..<45))
        XCTAssertEqual(transport.requestCount(scriptedPage(6)), 1, "a 404 is not retried")
    }

    func testA404InTheMiddleOfTheListIsAHoleThatFailsItKeepingThePagesBefore() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 60)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(3) ? .status(404, body: #"{"error":"gone"}"#) : api.reply(request)
        }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        let error = try XCTUnwrap(outcome.error)
        XCTAssertEqual(error.code, .http)
        XCTAssertEqual(error.httpStatus, 404)
        XCTAssertEqual(error.url, scriptedPage(3))
        XCTAssertEqual(itemIDs(json), Array(0..<20))
    }

    func testRetryAfterZeroWinsOverALongBackoff() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 20)
        transport.on(scriptedList) { request, attempt in
            request.url == scriptedPage(2) && attempt == 1
                ? .status(503, headers: [HTTPHeader(name: "retry-after", value: "0")]) : api.reply(request)
        }
        let client = try scriptedClient(transport) {
            $0.retry.baseDelayMilliseconds = 30_000
            $0.retry.maxDelayMilliseconds = 30_000
            $0.retry.maxAttempts = 2
        }
        let run = try client.makeList(anchorList())
        let started = Date()
        try run.start()
        XCTAssertEqual(outcome(of: run, within: 5), .complete)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
        XCTAssertEqual(transport.requestCount(scriptedPage(2)), 2)
    }

    func testRetryAfterSecondsDelaysTheNextAttempt() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 5)
        transport.on(scriptedList) { request, attempt in
            attempt == 1 ? .status(429, headers: [HTTPHeader(name: "Retry-After", value: "1")]) : api.reply(request)
        }
        let started = Date()
        let outcome = try scriptedClient(transport).fetchAll(anchorList()).outcome
        XCTAssertEqual(outcome, .complete)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.95)
        XCTAssertEqual(transport.requestCount(scriptedPage(1)), 2)
    }

    // MARK: Redirects and credentials

    func testARedirectWithinTheOriginIsFollowedWithTheToken() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in .redirect(301, to: "/v2/things") }
        transport.on("\(scriptedBase)/v2/things") { _, _ in .json(#"{"items":[{"id":0}],"next_page":"?cursor=b"}"#) }
        transport.on("\(scriptedBase)/v2/things?cursor=b") { _, _ in
            .redirect(307, to: "https://API.example.com:443/v3/things?cursor=b")
        }
        transport.on("https://API.example.com:443/v3/things?cursor=b") { _, _ in
            .json(#"{"items":[{"id":1}],"next_page":null}"#)
        }
        let (json, outcome) = try scriptedClient(transport).fetchAll(linkedList())
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(json), [0, 1])
        XCTAssertEqual(transport.requests.map(\.url), [scriptedList, "\(scriptedBase)/v2/things",
                                                        "\(scriptedBase)/v2/things?cursor=b",
                                                        "https://API.example.com:443/v3/things?cursor=b"])
        XCTAssertTrue(transport.requests.allSatisfy { $0.headers.first(named: "Authorization") == "Bearer \(scriptedToken)" })
    }

    func testARedirectToAnotherOriginIsRefusedAndTheTokenIsNeverSentThere() throws {
        for location in ["https://evil.example.net/collect", "//evil.example.net/collect",
                         "https://api.example.com:8443/v1/things", "https://api.example.com.evil.example.net/"] {
            let transport = ScriptedTransport()
            transport.on(scriptedList) { _, _ in .redirect(302, to: location) }
            transport.otherwise { _, _ in .json(#"{"items":[],"next_page":null}"#) }
            let outcome = try scriptedClient(transport).fetchAll(linkedList()).outcome
            XCTAssertEqual(outcome.error?.code, .crossOrigin, location)
            XCTAssertEqual(transport.requests.map(\.url), [scriptedList], "nothing is sent to \(location)")
        }
    }

    func testARedirectFromHTTPSToHTTPIsRefused() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in .redirect(301, to: "http://api.example.com/v1/things") }
        transport.otherwise { _, _ in .json(#"{"items":[],"next_page":null}"#) }
        let outcome = try scriptedClient(transport).fetchAll(linkedList()).outcome
        XCTAssertEqual(outcome.error?.code, .crossOrigin)
        XCTAssertFalse(transport.requests.contains { $0.url.hasPrefix("http:") })
    }

    func testANextLinkToAnotherOriginIsRefused() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in .json(#"{"items":[{"id":0}],"next_page":"https://evil.example.net/p2"}"#) }
        transport.otherwise { _, _ in .json(#"{"items":[],"next_page":null}"#) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(linkedList())
        XCTAssertEqual(outcome.error?.code, .crossOrigin)
        XCTAssertEqual(outcome.error?.url, "https://evil.example.net/p2")
        XCTAssertEqual(itemIDs(json), [0])
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testTooManyRedirectsFail() throws {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in .redirect(302, to: request.url + "x") }
        let outcome = try scriptedClient(transport) { $0.maxRedirects = 2 }.fetchAll(linkedList()).outcome
        XCTAssertEqual(outcome.error?.code, .http)
        XCTAssertTrue(outcome.error?.message.contains("more than 2 redirects") ?? false)
        XCTAssertEqual(transport.requests.count, 3)
    }

    func testARedirectWithoutALocationIsAnHTTPFailure() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .status(302) }
        let outcome = try scriptedClient(transport).fetchAll(linkedList()).outcome
        XCTAssertEqual(outcome.error?.code, .http)
        XCTAssertEqual(outcome.error?.httpStatus, 302)
    }

    func testTheBearerTokenNeverAppearsInAnyErrorMessage() throws {
        let failures: [(String, ScriptedTransport.Handler)] = [
            ("cross-origin redirect", { _, _ in .redirect(to: "https://evil.example.net/?t=1") }),
            ("401", { _, _ in .status(401, body: #"{"error":"invalid_token","message":"the token is expired"}"#) }),
            ("transport failure", { _, _ in .failure(.tls, "certificate verify failed") }),
            ("not JSON", { _, _ in .json("<html>oops</html>") }),
            ("loop", { _, _ in .json(#"{"items":[1],"next_page":"\#(scriptedList)"}"#) }),
            ("body too large", { _, _ in .json(#"{"items":[\#(String(repeating: "1,", count: 100))1]}"#) }),
            ("bad total", { _, _ in .json(#"{"items":[1],"total":-3}"#) }),
        ]
        for (name, handler) in failures {
            let transport = ScriptedTransport()
            transport.otherwise(handler)
            var description = linkedList()
            description.signals[.total] = .body(JSONPointer("/total")!)
            let outcome = try scriptedClient(transport) { $0.maxBodyBytes = 150 }.fetchAll(description).outcome
            let error = try XCTUnwrap(outcome.error, name)
            for text in [error.message, error.description, error.url ?? "", error.bodyExcerpt ?? ""] {
                XCTAssertFalse(text.contains(scriptedToken), "\(name): \(text)")
                XCTAssertFalse(text.contains("Bearer"), "\(name): \(text)")
            }
        }
    }

    // MARK: Limits

    func testABodyLargerThanTheCapFailsAsBodyTooLarge() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in .json(#"{"items":[1,2],"next_page":"?p=2"}"#) }
        transport.on("\(scriptedList)?p=2") { _, _ in .json(#"{"items":[\#(String(repeating: "0,", count: 100))0]}"#) }
        let (json, outcome) = try scriptedClient(transport) { $0.maxBodyBytes = 64 }.fetchAll(linkedList())
        XCTAssertEqual(outcome.error?.code, .bodyTooLarge)
        XCTAssertEqual(outcome.error?.url, "\(scriptedList)?p=2")
        XCTAssertEqual(String(decoding: json, as: UTF8.self), "[1,2]")
        XCTAssertTrue(transport.requests.allSatisfy { $0.maxBodyBytes == 64 }, "the transport is told the cap")
    }

    func testATransportRefusingALargeBodyFailsAsBodyTooLargeWithoutRetrying() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .failure(.tooLarge) }
        let outcome = try scriptedClient(transport).fetchAll(linkedList()).outcome
        XCTAssertEqual(outcome.error?.code, .bodyTooLarge)
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testAFailingPageKeepsTheItemsBeforeItAndFailsWithItsCode() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 100)
        transport.on(scriptedList) { request, _ in
            switch request.url {
            case scriptedPage(4): return .status(400, body: #"{"error":"bad request"}"#).after(5)
            case scriptedPage(2): return api.reply(request).after(20) // still in flight when page 4 fails
            default: return api.reply(request).after(1)
            }
        }
        let log = SnapshotLog()
        let run = try scriptedClient(transport) { $0.window = 8 }.makeList(anchorList(), onSnapshot: log.callback)
        try run.start()
        let error = try XCTUnwrap(outcome(of: run)?.error)
        XCTAssertEqual(error.code, .http)
        XCTAssertEqual(error.httpStatus, 400)
        XCTAssertEqual(error.url, scriptedPage(4))
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<30))
        XCTAssertEqual(log.ids, Array(0..<30))
    }

    func testACallbackSlowerThanTheServerHoldsTheFetchingBack() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 10_000)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let busy = DispatchSemaphore(value: 0)
        let snapshots = Shared(0)
        let run = try scriptedClient(transport) { $0.window = 4 }.makeList(anchorList(), keepsItems: false) { _ in
            let count = snapshots.update { count -> Int in
                count += 1
                return count
            }
            if count == 1 { busy.wait() } // the first callback takes its time
            return true
        }
        try run.start()
        Thread.sleep(forTimeInterval: 0.3)
        let made = run.requestsMade
        // The busy callback's page; fewer than a window waiting when the last fetch went out; at
        // most twice the window past them (arrived ahead of a slower page, or in flight): nowhere
        // near the 1,000 pages the server would answer in that time.
        XCTAssertLessThanOrEqual(made, 1 + 3 + 2 * 4, "the fetching went on while the callback was busy")
        busy.signal()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(run.requestsMade, 1000)
    }

    func testABadPageFailsTheListWithBadPageNamingItsURL() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 30)
        transport.on(scriptedList) { request, _ in request.url == scriptedPage(3) ? .json("this is not json") : api.reply(request) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        XCTAssertEqual(outcome.error?.code, .badPage)
        XCTAssertEqual(outcome.error?.url, scriptedPage(3))
        XCTAssertEqual(itemIDs(json), Array(0..<20))
        XCTAssertEqual(transport.requestCount(scriptedPage(3)), 1, "a bad page is not retried")
    }

    func testMaxItemsEndsTheListAsLimitReachedWithExactlyThatManyItems() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 100)
        transport.on(scriptedList) { request, _ in api.reply(request).after(1) }
        var description = anchorList()
        description.maxItems = 25
        let log = SnapshotLog()
        let run = try scriptedClient(transport).makeList(description, onSnapshot: log.callback)
        try run.start()
        XCTAssertEqual(outcome(of: run), .finished(.itemLimit))
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<25))
        XCTAssertEqual(log.ids, Array(0..<25))
    }

    func testThePageCapStopsAnEndlessWalk() throws {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in
            .json(#"{"items":[\#(request.url.count)],"next_page":"\#(request.url)x"}"#)
        }
        let (json, outcome) = try scriptedClient(transport) { $0.maxPages = 5 }.fetchAll(linkedList())
        XCTAssertEqual(outcome.error?.code, .pageLimit)
        XCTAssertEqual(transport.requests.count, 5)
        let length = scriptedList.count
        XCTAssertEqual(String(decoding: json, as: UTF8.self), "[\(length),\(length + 1),\(length + 2),\(length + 3),\(length + 4)]")
    }

    func testANextLinkLoopFailsAsLoop() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { request, _ in
            // No cursor, then 1, 2, and back to 1.
            let cursor = FakeAnchorAPI.query(request.url, "c").flatMap { Int($0) } ?? 0
            return .json(#"{"items":[\#(cursor)],"next_page":"?c=\#(cursor == 2 ? 1 : cursor + 1)"}"#)
        }
        let (json, outcome) = try scriptedClient(transport).fetchAll(linkedList())
        XCTAssertEqual(outcome.error?.code, .loop)
        XCTAssertEqual(String(decoding: json, as: UTF8.self), "[0,1,2]")
        XCTAssertEqual(transport.requests.count, 3)
    }

    func testATotalDisagreeingWithTheItemsIsIncomplete() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 47, claimedTotal: 50)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        let error = try XCTUnwrap(outcome.error)
        XCTAssertEqual(error.code, .incomplete)
        XCTAssertEqual(error.message, "the server reported 50 items but 47 arrived")
        XCTAssertNil(error.hint)
        XCTAssertEqual(itemIDs(json), Array(0..<47))
    }

    func testMoreItemsThanTheTotalWithoutAnIdentityNameTheIdentityAsTheCure() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 47, claimedTotal: 45)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let error = try XCTUnwrap(try scriptedClient(transport).fetchAll(anchorList()).outcome.error)
        XCTAssertEqual(error.code, .incomplete)
        XCTAssertTrue(error.message.hasPrefix("the server reported 45 items but 47 arrived, some perhaps twice"), error.message)
        XCTAssertEqual(error.hint?.hasPrefix("--id POINTER"), true)

        var identified = anchorList()
        identified.signals[.identity] = .item(JSONPointer("/id")!)
        let named = try XCTUnwrap(try scriptedClient(transport).fetchAll(identified).outcome.error)
        XCTAssertEqual(named.message, "the server reported 45 items but 47 arrived", "no repeat among them: the total is wrong")
        XCTAssertNil(named.hint)
    }

    func testMoreItemsThanTheTotalIsIncompleteToo() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 30, claimedTotal: 25)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        XCTAssertEqual(try scriptedClient(transport).fetchAll(anchorList()).outcome.error?.code, .incomplete)
    }

    // MARK: Stopping

    func testACallbackReturningFalseStopsTheListAndIsNotCalledAgain() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 200)
        transport.on(scriptedList) { request, _ in api.reply(request).after(5) }
        let log = SnapshotLog { count in count < 2 }
        let run = try scriptedClient(transport) { $0.window = 4 }.makeList(anchorList(), onSnapshot: log.callback)
        try run.start()
        let result = outcome(of: run)
        log.markFinished()
        XCTAssertEqual(result?.error?.code, .stopped)
        XCTAssertEqual(log.all.count, 2)
        Thread.sleep(forTimeInterval: 0.05) // pages in flight would have arrived by now
        XCTAssertEqual(log.all.count, 2)
        XCTAssertEqual(log.callbacksAfterFinish, 0)
        XCTAssertLessThan(transport.requests.count, 20)
    }

    func testSnapshotsQueuedBehindAStoppingCallbackAreNotDelivered() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 100)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let log = SnapshotLog { _ in
            Thread.sleep(forTimeInterval: 0.05) // the other pages arrive and queue their snapshots
            return false
        }
        let run = try scriptedClient(transport).makeList(anchorList(), onSnapshot: log.callback)
        try run.start()
        let result = outcome(of: run)
        log.markFinished()
        XCTAssertEqual(result?.error?.code, .stopped)
        XCTAssertEqual(log.all.count, 1)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<10), "the prefix is what was delivered")
    }

    func testCancelWhileRunningEndsAsCancelledAndAbandonsTheRequestsInFlight() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 100)
        transport.on(scriptedList) { request, _ in request.url == scriptedPage(1) ? api.reply(request) : .never }
        let firstSnapshot = DispatchSemaphore(value: 0)
        let run = try scriptedClient(transport) { $0.window = 3 }.makeList(anchorList()) { _ in
            firstSnapshot.signal()
            return true
        }
        try run.start()
        XCTAssertEqual(firstSnapshot.wait(timeout: .now() + 5), .success)
        // The snapshot may be delivered before pages 2-4 reach the transport: wait until they have.
        let deadline = Date().addingTimeInterval(5)
        while transport.outstanding < 3, Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        XCTAssertEqual(transport.outstanding, 3)
        run.cancel()
        let result = outcome(of: run)
        XCTAssertEqual(result?.error?.code, .cancelled)
        XCTAssertEqual(transport.outstanding, 0)
        XCTAssertEqual(transport.cancelledCount, 3)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<10))
        run.cancel() // a second cancel changes nothing
        XCTAssertEqual(run.outcome?.error?.code, .cancelled)
    }

    func testCancelAfterTheEndKeepsTheOutcome() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 5)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let run = try scriptedClient(transport).makeList(anchorList())
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        run.cancel()
        run.close()
        XCTAssertEqual(run.outcome, .complete)
    }

    func testACancelAfterTheEndWasDecidedButBeforeEverySnapshotWasDeliveredIsNotASuccess() throws {
        // The race of a cancel with the completion: the last page is in and the list is
        // complete, but the consumer has not had every snapshot yet when the cancel comes. The
        // snapshots still queued are not delivered (nothing is, after a stop), so the run must
        // not end complete with a prefix that lacks them.
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 30)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let inFirstCallback = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let log = SnapshotLog { count in
            if count == 1 {
                inFirstCallback.signal()
                release.wait()
            }
            return true
        }
        let run = try scriptedClient(transport) { $0.window = 8 }.makeList(anchorList(), onSnapshot: log.callback)
        try run.start()
        XCTAssertEqual(inFirstCallback.wait(timeout: .now() + 5), .success)
        // Pages 2 and 3 arrive while the first callback runs: the end is decided behind it.
        let deadline = Date().addingTimeInterval(5)
        while (transport.requests.count < 3 || run.requestsInFlight > 0), Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        Thread.sleep(forTimeInterval: 0.05)
        run.cancel()
        release.signal()
        let result = outcome(of: run)
        log.markFinished()
        let prefix = itemIDs(run.prefixJSON())
        if result == .complete {
            XCTAssertEqual(prefix, Array(0..<30), "a complete list is whole")
        } else {
            XCTAssertEqual(result?.error?.code, .cancelled)
            XCTAssertEqual(prefix, Array(0..<10), "the prefix is what was delivered")
        }
        XCTAssertEqual(log.all.count, 1, "nothing is delivered after the cancel")
    }

    func testCloseFromInsideTheCallbackDoesNotDeadlock() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 50)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(1) ? api.reply(request) : api.reply(request).after(200)
        }
        let holder = Shared<ListRun?>(nil)
        let run = try scriptedClient(transport).makeList(anchorList()) { _ in
            holder.value?.close()
            return true
        }
        holder.update { $0 = run }
        try run.start()
        XCTAssertEqual(outcome(of: run)?.error?.code, .cancelled)
        holder.update { $0 = nil }
    }

    func testWaitFromInsideASnapshotCallbackThrowsReentrant() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 20)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let holder = Shared<ListRun?>(nil)
        let thrown = Shared<[SheafError.Code]>([])
        let run = try scriptedClient(transport).makeList(anchorList()) { _ in
            if let run = holder.value {
                do {
                    _ = try run.wait()
                } catch let error as SheafError {
                    thrown.update { $0.append(error.code) }
                } catch {
                    XCTFail("\(error)")
                }
            }
            return true
        }
        holder.update { $0 = run }
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        holder.update { $0 = nil }
        XCTAssertEqual(thrown.value, [.reentrant, .reentrant])
    }

    // MARK: Misuse

    func testARunStartsOnlyOnceAndCannotBeAwaitedBeforeItStarts() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .json(#"{"items":[]}"#) }
        let run = try scriptedClient(transport).makeList(linkedList())
        XCTAssertThrowsError(try run.wait()) { XCTAssertEqual(($0 as? SheafError)?.code, .state) }
        XCTAssertNil(run.outcome)
        try run.start()
        XCTAssertThrowsError(try run.start()) { XCTAssertEqual(($0 as? SheafError)?.code, .state) }
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testDescriptionsThatCannotRunAreRefusedBeforeAnyRequest() throws {
        let transport = ScriptedTransport()
        let client = try scriptedClient(transport)
        var cursorWithoutSignal = linkedList()
        cursorWithoutSignal.paging = .cursor(parameter: "cursor", size: nil)
        var signalWithoutCursorPaging = anchorList()
        signalWithoutCursorPaging.signals[.cursor] = .body(JSONPointer("/next_cursor")!)
        var negativeOffset = linkedList()
        negativeOffset.paging = .offset(.init(parameter: "offset", first: -1))
        for description in [cursorWithoutSignal, signalWithoutCursorPaging, negativeOffset] {
            XCTAssertThrowsError(try client.makeList(description)) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
        }
        var description = ListDescription(path: "/v1/things")
        for (signal, source) in [(Signal.items, SignalSource.header("X-Items")), (.identity, .body(JSONPointer("/id")!)),
                                 (.cursor, .link("next")), (.total, .lastItem(JSONPointer("/n")!)),
                                 (.next, .header("Bad Name")), (.identity, .detect)] {
            XCTAssertThrowsError(try description.read(signal, from: source), "\(signal) from \(source)") {
                XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument)
            }
        }
        var negative = linkedList()
        negative.maxItems = -1
        XCTAssertThrowsError(try client.makeList(negative)) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
        let zeroSize = anchorList(pageSize: 0)
        XCTAssertThrowsError(try client.makeList(zeroSize)) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
        XCTAssertEqual(transport.requests.count, 0)
    }

    func testAClientNeedsAnAbsoluteHTTPBaseURLAndATokenWithoutControlCharacters() {
        let transport = ScriptedTransport()
        for base in ["ftp://api.example.com", "/v1", "api.example.com", ""] {
            XCTAssertThrowsError(try SheafClient(baseURL: base, transport: transport), base) {
                XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument)
            }
        }
        XCTAssertThrowsError(try SheafClient(baseURL: scriptedBase, bearerToken: "abc\r\nX-Evil: 1", transport: transport)) {
            XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument)
            XCTAssertFalse(($0 as? SheafError)?.message.contains("abc") ?? true)
        }
        var configuration = ClientConfiguration()
        configuration.window = 65
        XCTAssertThrowsError(try SheafClient(baseURL: scriptedBase, transport: transport, configuration: configuration)) {
            XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument)
        }
    }

    func testAClientWithoutATokenSendsNoAuthorization() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .json(#"{"items":[]}"#) }
        let client = try SheafClient(baseURL: scriptedBase, transport: transport)
        XCTAssertEqual(try client.fetchAll(linkedList()).outcome, .complete)
        XCTAssertNil(transport.requests.first?.headers.first(named: "Authorization"))
    }
}
