import XCTest
@testable import Sheaf

private let base = "https://api.example.com/v1/things"
private let pageNumbers = Paging.pageNumber(.init(parameter: "page", first: 1, size: .init(parameter: "per_page", value: 10)))

private func page(_ count: Int, next: String? = nil, total: Int? = nil, more: Bool? = nil) -> Page {
    var page = Page(body: [], items: Array(repeating: 0..<0, count: count), identities: [], next: next, total: total)
    page.more = more ?? (next != nil ? true : nil)
    return page
}

/// The text of a resume token of `anchorList()` at page 3, with `fields` (raw JSON values) in
/// place of its own: what a forger hands in.
private func forgedToken(_ fields: [String: String] = [:]) -> String {
    var values = ["v": "1", "f": "\"1\"", "k": "\"page_number\"", "p": "\"page\"", "o": "1", "zp": "\"per_page\"", "z": "10",
                  "r": "1", "s": "{}", "w": "10", "u": "\"\(scriptedList)?page=3&per_page=10\"", "i": "0", "n": "20"]
    values.merge(fields) { $1 }
    let json = "{" + values.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    return "sheaf-resume-1." + Data(json.utf8).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

private extension [PagePlanner.Action] {
    var fetchedIndices: [Int] {
        compactMap { if case .fetch(let index, _) = $0 { index } else { nil } }
    }

    var ending: PagePlanner.Ending? {
        for case .finish(let ending) in self { return ending }
        return nil
    }
}

/// Resume tokens (their text, the planner's budgets and continuations, the assembler's cut) in
/// isolation; the end-to-end runs are in the C harness and the Python tests.
final class ResumeTests: XCTestCase {
    func testATokenReadsBackAsWritten() throws {
        let token = ResumeToken(
            fingerprint: 0xDEAD_BEEF_0123_4567,
            paging: .cursor(parameter: "page[after]", size: .init(parameter: "page[size]", value: 40)),
            signals: [.items: .body(JSONPointer("/data")!), .cursor: .body(JSONPointer("/meta/after_cursor")!),
                      .hasMore: .header("X-More"), .next: .link("next"), .identity: .item(JSONPointer("/a~1b")!)],
            resolved: true, pageSize: 40,
            point: ResumePoint(url: "https://h/x?page%5Bafter%5D=abc%2B%2F&q=\"é\"", skip: 3, itemsBefore: 1_000_003))
        let text = token.description
        XCTAssertTrue(text.hasPrefix("sheaf-resume-1."))
        XCTAssertTrue(text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, text)
        let read = try ResumeToken(text)
        XCTAssertEqual(read.description, text)
        XCTAssertEqual(read.point, token.point)
        XCTAssertEqual(read.paging, token.paging)
        XCTAssertEqual(read.pageSize, 40)
        for (signal, source) in token.signals { XCTAssertEqual(read.signals[signal], source, signal.rawValue) }
        // Resolved: what the run did not read is absent, never detected again.
        XCTAssertEqual(read.signals[.total], SignalSource.none)
    }

    func testAnUnresolvedTokenLeavesItsOpenPartsToDetection() throws {
        let token = ResumeToken(fingerprint: 1, paging: .detect, signals: [:], resolved: false, pageSize: 0,
                                point: ResumePoint(url: "https://h/x", skip: 0, itemsBefore: 0))
        let read = try ResumeToken(token.description)
        XCTAssertEqual(read.paging, .detect)
        XCTAssertTrue(read.signals.isEmpty)
    }

    func testAnUnresolvedTokenKeepsASignalTheListSaidItHasNot() throws {
        // Found by the parsers fuzzer (corpus/parsers/resume-json-unresolved-explicit-none): a
        // token made before the first page was read (page one failed, or none was fetched) left
        // out `.none` signals, which an unresolved token reads back as detected: a list told it
        // has no total resumed detecting one (and checking its items against it).
        let transport = ScriptedTransport()
        transport.on(scriptedList) { _, attempt in
            attempt == 1 ? .status(500) : .json(#"{"items":[{"id":1},{"id":2}],"total":2,"next_page":null}"#)
        }
        let client = try scriptedClient(transport) { $0.retry.maxAttempts = 1 }
        var list = ListDescription(path: "/v1/things")
        list.signals = [.items: .body(JSONPointer("/items")!), .total: .none] // the rest detected
        let first = try client.makeList(list)
        try first.start()
        XCTAssertEqual(outcome(of: first)?.error?.code, .http)
        let token = try XCTUnwrap(first.resumeToken())
        XCTAssertFalse(token.resolved)
        let read = try ResumeToken(token.description)
        XCTAssertEqual(read.signals[.total], SignalSource.none, "an unresolved token keeps what the list has not")
        XCTAssertEqual(read, try ResumeToken(read.description), "a token reads back as written")
        // A resolved token still leaves `.none` out: absent, it means that there.
        func resolved(_ signals: [Signal: SignalSource]) -> String {
            ResumeToken(fingerprint: 1, paging: .next, signals: signals, resolved: true, pageSize: 0,
                        point: ResumePoint(url: "https://h/x")).description
        }
        XCTAssertEqual(resolved([.total: .none]), resolved([:]))

        var resumed = list
        resumed.resume = read
        let rest = try client.makeList(resumed)
        try rest.start()
        XCTAssertEqual(outcome(of: rest), .complete)
        XCTAssertEqual(itemIDs(rest.prefixJSON()), [1, 2])
        let described = String(decoding: rest.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(described.contains(#""total":null"#), "the resumed run reads no total, as its list said: \(described)")
    }

    func testTextThatIsNotATokenIsRefused() {
        let valid = ResumeToken(fingerprint: 1, paging: pageNumbers, signals: [:], resolved: true, pageSize: 10,
                                point: ResumePoint(url: "https://h/x?page=3", skip: 0, itemsBefore: 20)).description
        for text in ["", "sheaf-resume-1.", "sheaf-resume-2." + valid.dropFirst(15), "sheaf-resume-1.!!!",
                     String(valid.dropLast(8)), "sheaf-resume-1." + "e30"] { // e30 is "{}"
            XCTAssertThrowsError(try ResumeToken(text), text) { error in
                XCTAssertEqual((error as? SheafError)?.code, .invalidArgument)
            }
        }
    }

    func testEveryNumberOfAForgedTokenIsRangeCheckedBeforeTheRunAddsToIt() throws {
        // A token comes back from users and disk: a count near 2^63 overflowed the run's sum of
        // the items before and trapped (SIGILL) instead of failing.
        XCTAssertNoThrow(try ResumeToken(forgedToken()), "the unforged form reads")
        let fields = [("o", "first page number or offset"), ("z", "page size"), ("w", "page size served"),
                      ("i", "items to skip"), ("n", "items delivered before")]
        let values = ["9223372036854775807", "9223372036854775800", "9007199254740993", "-1",
                      "-9223372036854775808", "99999999999999999999999", "1e3", "1.5"]
        for (field, name) in fields {
            for value in values {
                XCTAssertThrowsError(try ResumeToken(forgedToken([field: value])), "\(field)=\(value)") { error in
                    let error = error as? SheafError
                    XCTAssertEqual(error?.code, .invalidArgument)
                    XCTAssertTrue(error?.message.contains("\(name) is out of range") == true, "\(field)=\(value): \(error?.message ?? "")")
                }
            }
        }
        // The largest number a token holds reads back.
        XCTAssertEqual(try ResumeToken(forgedToken(["n": "9007199254740992"])).point.itemsBefore, 1 << 53)
    }

    func testAForgedPageNumberOutOfRangeInTheTokensURLIsRefusedBeforeAnyRequest() throws {
        let transport = ScriptedTransport()
        let client = try scriptedClient(transport)
        let list = anchorList()
        let fingerprint = ResumeToken.fingerprint(list, firstURL: try client.firstURL(of: list), redactor: client.redactor)
        for page in ["9223372036854775807", "-9223372036854775808", "-1", "9007199254740993"] {
            var resumed = list
            resumed.resume = try ResumeToken(forgedToken(["f": "\"\(String(fingerprint, radix: 16))\"",
                                                          "u": "\"\(scriptedList)?page=\(page)&per_page=10\""]))
            XCTAssertThrowsError(try client.makeList(resumed), page) { error in
                XCTAssertEqual((error as? SheafError)?.code, .invalidArgument, page)
                XCTAssertTrue((error as? SheafError)?.message.contains("out of range") == true, "\(error)")
            }
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    // MARK: What a token may make a run fetch

    /// A token of `list` (its fingerprint genuine) whose next page is `url`: a token edited by hand.
    private func token(of list: ListDescription, client: SheafClient, at url: String) throws -> ResumeToken {
        ResumeToken(fingerprint: ResumeToken.fingerprint(list, firstURL: try client.firstURL(of: list), redactor: client.redactor),
                    paging: list.paging, signals: list.signals, resolved: true, pageSize: 10,
                    point: ResumePoint(url: url, skip: 0, itemsBefore: 20))
    }

    func testATokenEditedToAnotherOriginIsRefusedAndTheListsSecretsStayHome() throws {
        // Cross-origin following on: a page elsewhere would be fetched, with the list's own
        // secret query value restored into it.
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .json(#"{"items":[],"next_page":null}"#) }
        let client = try scriptedClient(transport) { $0.crossOrigin = .followWithoutCredentials }
        let list = linkedList("/v1/things?signature=sig-9f8e7d6c5b")
        for url in ["https://evil.example.net/v1/things?c=2", "http://api.example.com/v1/things?c=2",
                    "https://api.example.com:8443/v1/things?c=2", "https://evil.example.net/v1/things?signature=x&c=2",
                    "https://user:pw@api.example.com/v1/things?c=2", "https://api.example.com.evil.example.net/v1/things"] {
            var resumed = list
            resumed.resume = try token(of: list, client: client, at: url)
            XCTAssertThrowsError(try client.makeList(resumed), url) { error in
                XCTAssertEqual((error as? SheafError)?.code, .invalidArgument, url)
                XCTAssertTrue((error as? SheafError)?.message.contains("origin") == true, "\(error)")
            }
        }
        XCTAssertEqual(transport.requests.map(\.url), [])
    }

    func testATokenEditedToAnotherPathOfTheOriginIsRefusedWhenPagesAreLinksAlone() throws {
        // The credential goes to the whole origin: a token must not aim it at another resource.
        let transport = ScriptedTransport()
        transport.otherwise { _, _ in .json(#"{"items":[{"id":1}],"next_page":null}"#) }
        let client = try scriptedClient(transport)
        let list = linkedList()
        for url in ["https://api.example.com/v1/admin/keys", "https://api.example.com/v1/things/../admin/keys",
                    "https://api.example.com/v1/things/%2E%2E/admin", "https://api.example.com/v1/things/secret",
                    "https://api.example.com/v1/thingsX?c=2", "https://api.example.com/?c=2"] {
            var resumed = list
            resumed.resume = try token(of: list, client: client, at: url)
            XCTAssertThrowsError(try client.makeList(resumed), url) { error in
                XCTAssertEqual((error as? SheafError)?.code, .invalidArgument, url)
                XCTAssertTrue((error as? SheafError)?.message.contains("path") == true, "\(error)")
            }
        }
        XCTAssertEqual(transport.requests.map(\.url), [])
    }

    func testAGenuineTokenOnTheListsPathResumesWithItsOwnQuery() throws {
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 25)
        transport.otherwise { request, _ in api.reply(request) } // "/v1/things/" too
        let client = try scriptedClient(transport)
        for url in ["\(scriptedList)?page=3&per_page=10", "\(scriptedList)/?page=3&per_page=10"] {
            var resumed = linkedList()
            resumed.resume = try token(of: linkedList(), client: client, at: url)
            let run = try client.makeList(resumed)
            try run.start()
            XCTAssertEqual(outcome(of: run), .complete)
            XCTAssertEqual(itemIDs(run.prefixJSON()), Array(20..<25), url)
            XCTAssertEqual(transport.requests.last?.url, url)
        }
    }

    func testANumberedPageThatLeftTheListsPathResumesOnTheListsOwnPath() throws {
        // GitHub names /organizations/ID/repos?page=k in the Link of /orgs/NAME/repos: the token
        // keeps the page number, never the other path.
        let transport = ScriptedTransport()
        let api = FakeAnchorAPI(count: 25)
        transport.on(scriptedList) { request, _ in api.reply(request) }
        let client = try scriptedClient(transport)
        var resumed = anchorList()
        resumed.resume = try token(of: anchorList(), client: client, at: "\(scriptedBase)/v1/admin/keys?page=3&per_page=10")
        let run = try client.makeList(resumed)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(20..<25))
        XCTAssertEqual(transport.requests.first?.url, scriptedPage(3))
        XCTAssertEqual(transport.requests.filter { !$0.url.hasPrefix(scriptedList + "?") }.map(\.url), [])
    }

    func testAFingerprintIgnoresBudgetsButNotTheDescription() {
        let redactor = Redactor([])
        var description = ListDescription(path: "/x")
        let url = "https://h/x"
        let plain = ResumeToken.fingerprint(description, firstURL: url, redactor: redactor)
        description.maxPages = 3
        description.maxItems = 7
        XCTAssertEqual(ResumeToken.fingerprint(description, firstURL: url, redactor: redactor), plain)
        description.paging = pageNumbers
        XCTAssertNotEqual(ResumeToken.fingerprint(description, firstURL: url, redactor: redactor), plain)
        XCTAssertNotEqual(ResumeToken.fingerprint(ListDescription(path: "/x"), firstURL: url + "?a=1", redactor: redactor), plain)
    }

    // MARK: The planner

    func testAPageBudgetEndsAParallelPlanWithoutFetchingPastIt() {
        var planner = PagePlanner(firstURL: "\(base)?page=1&per_page=10", paging: pageNumbers, window: 8, maxPages: 100, pageBudget: 3)
        _ = planner.start()
        let actions = planner.pageArrived(0, page(10, total: 100))
        XCTAssertEqual(actions.fetchedIndices, [1, 2])
        XCTAssertNil(planner.pageArrived(1, page(10, total: 100)).ending)
        let end = planner.pageArrived(2, page(10, total: 100))
        XCTAssertEqual(end.ending, .stopped(index: 3, reason: .pageBudget))
        XCTAssertEqual(planner.continuation(after: 2, page(10, total: 100)), "\(base)?page=4&per_page=10")
    }

    func testAPageBudgetThatTheListFitsInEndsItComplete() {
        var planner = PagePlanner(firstURL: "\(base)?page=1&per_page=10", paging: pageNumbers, window: 8, maxPages: 100, pageBudget: 3)
        _ = planner.start()
        _ = planner.pageArrived(0, page(10, total: 25))
        _ = planner.pageArrived(1, page(10, total: 25))
        let end = planner.pageArrived(2, page(5, total: 25))
        XCTAssertEqual(end.ending, .allPages(expectedTotal: 25, missingPages: []))
        XCTAssertNil(planner.continuation(after: 2, page(5, total: 25)))
    }

    func testAPageBudgetStopsAWalkOfNextLinksAtTheLinkItWouldFollow() {
        var planner = PagePlanner(firstURL: "\(base)?c=0", paging: .next, window: 8, maxPages: 100, pageBudget: 2)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(10, next: "\(base)?c=1")).fetchedIndices, [1])
        let second = page(10, next: "\(base)?c=2")
        let end = planner.pageArrived(1, second)
        XCTAssertEqual(end.ending, .stopped(index: 2, reason: .pageBudget))
        XCTAssertEqual(planner.continuation(after: 1, second), "\(base)?c=2")
    }

    func testARequestBudgetStopIsCutLikeAFailureButEndsAsItsReason() {
        var planner = PagePlanner(firstURL: "\(base)?page=1&per_page=10", paging: pageNumbers, window: 8, maxPages: 100)
        _ = planner.start()
        XCTAssertEqual(planner.pageArrived(0, page(10, total: 100)).fetchedIndices, Array(1...8))
        // Page 6 could not be sent again within the budget: pages after it are abandoned, and
        // the list waits for those before it.
        XCTAssertEqual(planner.pageStopped(6, .requestBudget), [.cancel([7, 8])])
        XCTAssertEqual(planner.pageArrived(7, page(10, total: 100)), [], "an abandoned page changes nothing")
        for index in 1...4 { XCTAssertNil(planner.pageArrived(index, page(10, total: 100)).ending) }
        // A failure at an earlier page comes first: the list failed, whatever stopped after it.
        let end = planner.pageFailed(5, SheafError(.transport, "reset"))
        guard case .failed(5, let error) = end.ending else { return XCTFail("\(end)") }
        XCTAssertEqual(error.code, .transport)
    }

    func testAResumedListCountsThePagesBeforeItAgainstTheTotal() {
        // Resumed at page 5 of 10-item pages (the first run started at page 1): 40 items lie
        // before, so a total of 57 leaves pages 5 and 6.
        func resumed() -> PagePlanner {
            var planner = PagePlanner(firstURL: "\(base)?page=5&per_page=10", paging: pageNumbers.starting(at: 5),
                                      window: 8, maxPages: 100, origin: 1, resumedPageSize: 10)
            _ = planner.start()
            return planner
        }
        var planner = resumed()
        XCTAssertEqual(planner.pageArrived(0, page(10, total: 57)).fetchedIndices, [1])
        XCTAssertEqual(planner.expectedPages, 2)
        // Resumed on the short last page: the first run's page size counts the pages before.
        planner = resumed()
        XCTAssertEqual(planner.pageArrived(0, page(7, total: 47)).ending, .allPages(expectedTotal: 47, missingPages: []))
    }

    // MARK: The assembler

    func testTheAssemblerSkipsWhatAResumedPageDeliveredBeforeAndRecordsWhereALimitCuts() {
        var assembler = Assembler(keepsItems: true, maxItems: 5, deduplicates: false, skipsOnFirstPage: 2)
        let body = Array("[1,2,3,4]".utf8)
        let items = [1..<2, 3..<4, 5..<6, 7..<8]
        let first = Page(body: body, items: items, identities: [])
        let delta = assembler.add(0, first).first
        XCTAssertEqual(delta.map { String(decoding: $0.json, as: UTF8.self) }, "[3,4]")
        XCTAssertNil(assembler.cut)
        let second = assembler.add(1, Page(body: Array("[5,6,7,8]".utf8), items: items, identities: [])).first
        XCTAssertEqual(second.map { String(decoding: $0.json, as: UTF8.self) }, "[5,6,7]")
        XCTAssertTrue(assembler.reachedLimit)
        XCTAssertEqual(assembler.cut?.index, 1)
        XCTAssertEqual(assembler.cut?.consumed, 3)
    }
}
