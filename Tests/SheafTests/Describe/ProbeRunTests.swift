import XCTest
@testable import Sheaf

/// How a hand-written API reaches page k: by one query parameter, or not at all.
private enum Addressing {
    /// `name=k`, pages from 1 (json-server's `_page`).
    case pageNumber(String)
    /// `name=k`, pages from 0 (Spring Data's `Page`: `?page=0` is page one).
    case pageNumberFromZero(String)
    /// `name=<items before>`.
    case offset(String)
    /// Every parameter ignored: page one, whatever is asked.
    case none
}

/// A hand-written list of `count` items `{"id":i}`, `size` a page, with its total and no next
/// link: a bare array with `X-Total-Count` (json-server's shape), or `{"data":[...],"total":n}`.
private func handWritten(count: Int, size: Int = 10, _ addressing: Addressing,
                         wrapped: Bool = false) -> ScriptedTransport.Handler {
    { request, _ in
        let number = { (name: String) in URLText.queryValue(request.url, name).flatMap { Int($0) } }
        let start: Int
        switch addressing {
        case .pageNumber(let name): start = ((number(name) ?? 1) - 1) * size
        case .pageNumberFromZero(let name): start = (number(name) ?? 0) * size
        case .offset(let name): start = number(name) ?? 0
        case .none: start = 0
        }
        let ids = start < count ? Array(start..<min(start + size, count)) : []
        let items = "[" + ids.map { #"{"id":\#($0)}"# }.joined(separator: ",") + "]"
        if wrapped { return .json(#"{"data":\#(items),"total":\#(count)}"#) }
        return .json(items, headers: [HTTPHeader(name: "X-Total-Count", value: String(count))])
    }
}

/// Runs the undescribed list at `scriptedList` (with `change` applied) to its end.
private func runUndescribed(_ transport: ScriptedTransport, _ change: (inout ListDescription) -> Void = { _ in })
    throws -> (ListRun, ListOutcome?) {
    var description = ListDescription(path: "/v1/things")
    change(&description)
    let run = try scriptedClient(transport) { $0.window = 4 }.makeList(description)
    try run.start()
    return (run, outcome(of: run))
}

final class ProbeRunTests: XCTestCase {
    func testAListNumberedFromZeroIsFoundByItsPageOneAndArrivesWhole() throws {
        // Spring Data's Page: ?page=0 is page one; asked for page 2 first, it would answer with its
        // third page, and the list would end OK without its second.
        let transport = ScriptedTransport()
        transport.on(scriptedList, handWritten(count: 45, .pageNumberFromZero("page"), wrapped: true))
        let (run, outcome) = try runUndescribed(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<45))
        XCTAssertEqual(transport.requests.map(\.url).prefix(2), [scriptedList, "\(scriptedList)?page=1"])
        let json = String(decoding: run.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(json.contains(#""paging":{"kind":"page_number","param":"page","first":0"#), json)
    }

    func testAJSONServerLikeListIsFoundByItsUnderscorePageAndArrivesWholeInOrder() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList, handWritten(count: 95, .pageNumber("_page")))
        let (run, outcome) = try runUndescribed(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<95))
        let urls = transport.requests.map(\.url)
        XCTAssertEqual(Array(urls.prefix(5)), [scriptedList, "\(scriptedList)?page=1", "\(scriptedList)?page=2",
                                                "\(scriptedList)?_page=1", "\(scriptedList)?_page=2"],
                       "page one, then the probes in order until one continues the list")
        XCTAssertEqual(Set(urls.dropFirst(5)), Set((2...10).map { "\(scriptedList)?_page=\($0)" }))
        XCTAssertEqual(urls.count, 14)
        XCTAssertTrue(transport.requests.allSatisfy { request in
            request.headers.contains { $0.name == "Authorization" && $0.value == "Bearer \(scriptedToken)" }
        }, "the probes are pages of the list's own URL: they carry its credential")
        let json = String(decoding: run.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(json.contains(#""paging":{"kind":"page_number","param":"_page","first":1"#), json)
        XCTAssertTrue(json.contains(#""detected":true}"#), json)
        XCTAssertTrue(json.contains(#""plan":"parallel""#), json)
    }

    func testTheProbedPagingIsCarriedByTheResumeToken() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList, handWritten(count: 95, .pageNumber("_page")))
        let (first, stopped) = try runUndescribed(transport) { $0.maxPages = 3 }
        XCTAssertEqual(stopped, .finished(.pageBudget))
        let token = try XCTUnwrap(first.resumeToken())
        XCTAssertEqual(token.paging, .pageNumber(.init(parameter: "_page", first: 1)))

        let resumedTransport = ScriptedTransport()
        resumedTransport.on(scriptedList, handWritten(count: 95, .pageNumber("_page")))
        let (rest, outcome) = try runUndescribed(resumedTransport) { $0.resume = token }
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(rest.prefixJSON()), Array(30..<95))
        XCTAssertTrue(resumedTransport.requests.allSatisfy { URLText.queryValue($0.url, "_page") != nil }, "nothing probed again")
    }

    func testAListThatHonoursOffsetIsFoundAfterThePageNumbersAreRefused() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList, handWritten(count: 45, .offset("offset"), wrapped: true))
        let (run, outcome) = try runUndescribed(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<45))
        let urls = transport.requests.map(\.url)
        let probes = ["page=1", "page=2", "_page=1", "_page=2", "p=1", "p=2", "offset=10"]
        XCTAssertEqual(Array(urls.prefix(8)), [scriptedList] + probes.map { "\(scriptedList)?\($0)" })
        XCTAssertEqual(Set(urls.dropFirst(8)), Set([10, 20, 30, 40].map { "\(scriptedList)?offset=\($0)" }))
        let json = String(decoding: run.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(json.contains(#""paging":{"kind":"offset","param":"offset","first":0"#), json)
    }

    func testAListThatIgnoresEveryParameterIsRefusedNamingWhatWasTried() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList, handWritten(count: 95, .none))
        let (run, outcome) = try runUndescribed(transport)
        let error = try XCTUnwrap(outcome?.error)
        XCTAssertEqual(error.code, .undetected)
        XCTAssertTrue(error.message.contains("tried page=1, page=2, _page=1, _page=2, p=1, p=2, offset=10, skip=10: none gave the "
                                             + "next items"), error.message)
        XCTAssertEqual(transport.requests.count, 1 + 2 * PagingProbe.pageParameters.count + PagingProbe.offsetParameters.count)
        XCTAssertEqual(itemIDs(run.prefixJSON()), [], "page one is not delivered: the list could not be followed")
    }

    func testTheProbesCountAgainstTheRequestBudget() throws {
        let transport = ScriptedTransport()
        transport.on(scriptedList, handWritten(count: 95, .none))
        let (_, outcome) = try runUndescribed(transport) { $0.maxRequests = 3 }
        XCTAssertEqual(outcome, .finished(.requestBudget))
        XCTAssertEqual(transport.requests.count, 3)
    }

    func testAProbeThatNeverAnswersIsAbandonedWhenTheListEnds() throws {
        let transport = ScriptedTransport()
        let list = handWritten(count: 95, .pageNumber("_page"))
        transport.on(scriptedList) { request, attempt in request.url == scriptedList ? list(request, attempt) : .never }
        let (_, outcome) = try runUndescribed(transport) { $0.deadlineMilliseconds = 100 }
        XCTAssertEqual(outcome?.error?.code, .deadline)
        XCTAssertEqual(transport.requests.map(\.url), [scriptedList, "\(scriptedList)?page=1"])
        // The deadline's thread cancels the attempt once it has let go of the run's lock, which
        // may be just after wait() returned.
        let cancelledBy = Date().addingTimeInterval(5)
        while transport.cancelledCount == 0, Date() < cancelledBy { Thread.sleep(forTimeInterval: 0.001) }
        XCTAssertEqual(transport.cancelledCount, 1, "the probe in flight is cancelled with the list")
        XCTAssertEqual(transport.outstanding, 0)
    }

    func testOnlyAnUndescribedPagingIsProbedNeverOneTheCallerDescribed() throws {
        let undescribed = ScriptedTransport()
        undescribed.on(scriptedList, handWritten(count: 95, .pageNumber("_page")))
        XCTAssertEqual(try runUndescribed(undescribed).1, .complete)
        XCTAssertTrue(undescribed.requests.contains { $0.url == "\(scriptedList)?page=2" })
        for paging in [Paging.next, .single] {
            let transport = ScriptedTransport()
            transport.on(scriptedList, handWritten(count: 95, .pageNumber("_page")))
            let (run, outcome) = try runUndescribed(transport) { $0.paging = paging }
            XCTAssertEqual(transport.requests.map(\.url), [scriptedList], "\(paging)")
            XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<10), "\(paging)")
            // What the caller described is what runs, whatever its total then says.
            XCTAssertNotEqual(outcome?.error?.code, .undetected, "\(paging)")
        }
    }
}
