import Foundation
import XCTest
@testable import Sheaf

/// Regression tests for bugs found in review of the first version of the core (all fixed); the
/// comment above each says what went wrong, in the past tense of the code as it was.
final class RegressionTests: XCTestCase {
    // MARK: JSONScanner.keyEquals

    /// JSONScanner.keyEquals compared the raw key bytes with the wanted key before decoding, so
    /// a key spelled with escapes matched a pointer token that spells those escapes literally:
    /// the key "\u0061" (which is "a") matched the token `\u0061` (six characters).
    func testAKeyWrittenWithEscapesDoesNotMatchATokenSpellingTheEscapeLiterally() throws {
        let text = #"{"\u0061":1}"#
        var targets = [JSONScanner.Target(pointer: JSONPointer(#"/\u0061"#)!, collectsElements: false)]
        try Array(text.utf8).withUnsafeBufferPointer { try JSONScanner($0).scanDocument(&targets) }
        XCTAssertNil(targets[0].range, #"the key is "a", not "\u0061""#)
    }

    // MARK: JSONPointer

    /// JSONPointer.init split and unescaped by Character (grapheme cluster), so a combining mark
    /// right after "/" or after "~0"/"~1" glued onto it: "/x/\u{301}y" did not split, and the
    /// valid "/~0\u{301}" was refused.
    func testAPointerIsParsedByUnicodeScalarsNotByGraphemeClusters() {
        XCTAssertEqual(JSONPointer("/x/\u{301}y")?.tokens, ["x", "\u{301}y"])
        XCTAssertEqual(JSONPointer("/~0\u{301}")?.tokens, ["~\u{301}"])
    }

    // MARK: PagePlanner

    /// PagePlanner.planAfterFirstPage: when the first page holds the whole total but names a
    /// next page, it called followNextLink without leaving `.firstPage` mode. Every later page is
    /// then planned as if it were the first: launchGuarded was always checked against index 1, so
    /// the page cap never tripped.
    func testThePageCapHoldsOnAWalkThatStartsFromAFullFirstPage() {
        let base = "https://api.example.com/v1/things"
        var planner = PagePlanner(firstURL: "\(base)?page=1",
                                  paging: .pageNumber(.init(parameter: "page", first: 1)),
                                  pagesSignalTheEnd: true, window: 4, maxPages: 3)
        _ = planner.start()
        var ending: PagePlanner.Ending?
        var fetched = 1
        for index in 0..<6 where ending == nil {
            // A server whose total is stale: it always says 10, and always names a next page.
            let page = Page(body: [], items: Array(repeating: 0..<0, count: 10), identities: [],
                            next: "\(base)?page=\(index + 2)", total: 10)
            for action in planner.pageArrived(index, page) {
                switch action {
                case .fetch: fetched += 1
                case .finish(let end): ending = end
                default: break
                }
            }
        }
        XCTAssertEqual(fetched, 3, "no more than the page cap of 3 pages is fetched")
        guard case .failed(_, let error)? = ending else { return XCTFail("expected a page-cap failure, got \(String(describing: ending))") }
        XCTAssertEqual(error.code, .pageLimit)
    }

    /// Same cause: the second page was re-planned as a first page. A shorter second page with a
    /// total then switched to parallel mode with a page count already reached, and the walk ended
    /// although the page named a next page.
    func testAWalkThatStartsFromAFullFirstPageKeepsFollowingNextLinks() {
        let base = "https://api.example.com/v1/things"
        var planner = PagePlanner(firstURL: "\(base)?page=1",
                                  paging: .pageNumber(.init(parameter: "page", first: 1)),
                                  pagesSignalTheEnd: true, window: 4, maxPages: 100)
        _ = planner.start()
        func page(_ count: Int, _ next: Int) -> Page {
            Page(body: [], items: Array(repeating: 0..<0, count: count), identities: [], next: "\(base)?page=\(next)", total: 10)
        }
        XCTAssertEqual(planner.pageArrived(0, page(10, 2)), [.accept(index: 0), .fetch(index: 1, url: "\(base)?page=2")])
        XCTAssertEqual(planner.pageArrived(1, page(5, 3)), [.accept(index: 1), .fetch(index: 2, url: "\(base)?page=3")])
    }

    // MARK: ListRun.perform

    /// ListRun.perform handled `.accept` (which may end the run at the item limit) and then went
    /// on with the `.fetch` actions of the same batch: when the first page already reaches
    /// maxItems, the window's worth of later pages was still requested after the run had ended,
    /// and those fetches were never cancelled.
    func testReachingMaxItemsOnTheFirstPageRequestsNoFurtherPages() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 100)
        transport.on(scriptedList) { request, _ in
            request.url == scriptedPage(1) ? api.reply(request) : api.reply(request).after(50)
        }
        var description = anchorList()
        description.maxItems = 5
        let (json, outcome) = try scriptedClient(transport) { $0.window = 4 }.fetchAll(description)
        Thread.sleep(forTimeInterval: 0.02) // fetches started late would have been sent by now
        XCTAssertEqual(outcome, .finished(.itemLimit))
        XCTAssertEqual(itemIDs(json), Array(0..<5))
        XCTAssertEqual(transport.requests.map(\.url), [scriptedPage(1)], "pages requested after the run ended")
        XCTAssertEqual(transport.outstanding, 0, "requests left running after wait() returned")
    }

    // MARK: HTTPFailure

    /// HTTPFailure.error copied the server's "error"/"message"/"detail"/"title" strings into the
    /// message and the body into `bodyExcerpt` verbatim. A server that echoes the credentials
    /// ("invalid token abc") put the bearer token into the error, which the contract forbids
    /// ("Tokens never appear in logs or error messages").
    func testATokenEchoedByTheServerIsRedactedFromTheError() throws {
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in
            .status(401, body: #"{"error":"invalid token \#(scriptedToken)"}"#)
        }
        let outcome = try scriptedClient(transport).fetchAll(linkedList()).outcome
        let error = try XCTUnwrap(outcome.error)
        XCTAssertEqual(error.httpStatus, 401)
        XCTAssertFalse(error.message.contains(scriptedToken), error.message)
        XCTAssertFalse(error.bodyExcerpt?.contains(scriptedToken) ?? false, error.bodyExcerpt ?? "")
    }

    // MARK: RetryPolicy (these crash the process, so they run in a child process)

    /// RetryPolicy.delayMilliseconds multiplied the Retry-After seconds by 1000 before capping
    /// (`min(maxDelayMilliseconds, seconds * 1000)`): a server answering
    /// "Retry-After: 9223372036854775807" overflowed Int and trapped, killing the host process.
    func testARetryAfterTooLargeToMultiplyIsCappedInsteadOfCrashing() throws {
        try runInChildProcess(#function) {
            RetryPolicy().delayMilliseconds(afterAttempt: 1, retryAfter: "9223372036854775807") == 30_000
        }
    }

    /// HTTPDate.parse accepted any year ≥ 1970; "days * 86_400" overflowed for a huge year and
    /// trapped (reached from a server's Retry-After header).
    func testAnHTTPDateWithAHugeYearIsRefusedInsteadOfCrashing() throws {
        try runInChildProcess(#function) {
            HTTPDate.parse("Sun, 06 Nov 999999999999999 08:49:37 GMT") == nil
        }
    }

    // MARK: Child processes

    private static let probeVariable = "SHEAF_KNOWN_BUG_PROBE"

    /// Runs `check` in a child process running only this test, so a trap fails this test instead
    /// of ending the whole suite. In the child, it runs `check` and exits with its verdict.
    private func runInChildProcess(_ function: String, file: StaticString = #filePath, line: UInt = #line,
                                   _ check: () -> Bool) throws {
        let name = String(function.prefix { $0 != "(" })
        if ProcessInfo.processInfo.environment[Self.probeVariable] == name {
            exit(check() ? 0 : 1)
        }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["SheafTests.RegressionTests/\(name)"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.probeVariable] = name
        child.environment = environment
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        child.waitUntilExit()
        if child.terminationReason == .uncaughtSignal {
            XCTFail("crashed with signal \(child.terminationStatus)", file: file, line: line)
        } else {
            XCTAssertEqual(child.terminationStatus, 0, "wrong result", file: file, line: line)
        }
    }

    func testATransportThatNeverAnswersTimesOutInsteadOfHoldingTheListForever() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in .never }
        let client = try scriptedClient(transport) {
            $0.timeoutMilliseconds = 50
            $0.retry.maxAttempts = 2
        }
        let run = try client.makeList(linkedList())
        let start = Date()
        try run.start()
        let result = outcome(of: run, within: 10)
        XCTAssertEqual(result?.error?.code, .transport)
        XCTAssertTrue(result?.error?.message.contains("no answer within 50 ms") == true, result?.error?.message ?? "")
        XCTAssertEqual(transport.requests.count, 2, "the timeout is retried like any other")
        XCTAssertEqual(transport.outstanding, 0, "the abandoned attempts were cancelled")
        XCTAssertLessThan(Date().timeIntervalSince(start), 2 * 2 * (0.05 + Double(Fetch.deadlineGraceMilliseconds) / 1000))
    }

    func testAnAnswerGivenInsideSendLeavesNoCycleKeepingTheRunAlive() throws {
        // A task that holds the completion (as a C transport's exchange does), stored after its
        // answer had come, tied the fetch and the run into a cycle; in 0.2.0 that needed an answer
        // from another thread landing between two locks (1 run in 5,000). This pins the same-thread
        // path; the fix (a task is kept only while its attempt is outstanding) covers both.
        let transport = AnsweringInsideSend(body: FakeAnchorAPI.itemsJSON(Array(0..<3)))
        weak var weakRun: ListRun?
        do {
            var description = ListDescription(path: "/v1/things")
            description.paging = .single
            let client = try SheafClient(baseURL: scriptedBase, transport: transport)
            let run = try client.makeList(description)
            weakRun = run
            try run.start()
            XCTAssertEqual(outcome(of: run), .complete)
        }
        let deadline = Date().addingTimeInterval(5)
        while weakRun != nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertNil(weakRun, "the run was freed")
    }

    func testAServerThatIgnoresThePageParameterFailsInsteadOfRepeatingPageOne() throws {
        // With a total and no identity, page one served three times ended OK with 30 items.
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, _ in .json(#"{"items":\#(FakeAnchorAPI.itemsJSON(Array(0..<10))),"next_page":null,"total":30}"#) }
        let (json, outcome) = try scriptedClient(transport).fetchAll(anchorList())
        XCTAssertEqual(outcome.error?.code, .repeatedPage)
        XCTAssertEqual(itemIDs(json), Array(0..<10), "page one is kept, its copies are not")
    }
}

/// Answers inside `send`, and hands back a task that holds the completion.
private struct AnsweringInsideSend: Transport {
    let body: String

    struct HoldingTask: TransportTask {
        let completion: @Sendable (Result<HTTPResponse, TransportError>) -> Void
        func cancel() {}
    }

    func send(_ request: HTTPRequest,
              completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) -> any TransportTask {
        completion(.success(HTTPResponse(status: 200, body: Array(body.utf8))))
        return HoldingTask(completion: completion)
    }
}
