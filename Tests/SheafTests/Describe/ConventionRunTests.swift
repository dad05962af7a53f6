import XCTest
@testable import Sheaf

private let base = "https://api.example.com/v1/things"

/// Items `{"id":i}` for `range`, as JSON.
private func itemsJSON(_ range: Range<Int>) -> String {
    "[" + range.map { #"{"id":\#($0)}"# }.joined(separator: ",") + "]"
}

private func query(_ url: String, _ name: String) -> Int? {
    URLText.queryValue(url, name).flatMap { Int($0) }
}

/// Runs an undescribed list of `transport` to its end.
private func runDetected(_ transport: ScriptedTransport, window: Int = 4, path: String = "/v1/things",
                         _ change: (inout ListDescription) -> Void = { _ in }) throws -> (ListRun, ListOutcome?) {
    var description = ListDescription(path: path)
    change(&description)
    let run = try scriptedClient(transport, { $0.window = window }).makeList(description)
    try run.start()
    return (run, outcome(of: run))
}

final class ConventionRunTests: XCTestCase {
    func testAGitHubListIsFetchedWholeInParallelWithNoDescription() throws {
        let count = 95, size = 10
        let transport = ScriptedTransport(delayMilliseconds: 5)
        transport.on(base) { request, _ in
            let page = query(request.url, "page") ?? 1
            let start = (page - 1) * size
            var links = [#"<\#(base)?page=\#((count + size - 1) / size)>; rel="last""#]
            if start + size < count { links.append(#"<\#(base)?page=\#(page + 1)>; rel="next""#) }
            return .json(itemsJSON(start..<min(start + size, count)), headers: [HTTPHeader(name: "Link", value: links.joined(separator: ", "))])
        }
        let (run, outcome) = try runDetected(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<count))
        XCTAssertEqual(transport.requests.count, 10, "one request a page: the page count came from rel=\"last\"")
        XCTAssertEqual(transport.maxOutstanding, 4)
        let json = String(decoding: run.descriptionJSON(), as: UTF8.self)
        XCTAssertTrue(json.contains(#""plan":"parallel""#), json)
        XCTAssertTrue(json.contains(#""next":{"source":"link","where":"next","detected":true}"#), json)
    }

    func testAGitLabListFollowsItsHeadersWithoutALinkHeader() throws {
        let count = 45, size = 20
        let transport = ScriptedTransport()
        transport.on(base) { request, _ in
            let page = query(request.url, "page") ?? 1
            let start = (page - 1) * size
            let next = start + size < count ? String(page + 1) : ""
            return .json(itemsJSON(start..<min(start + size, count)),
                         headers: [HTTPHeader(name: "X-Next-Page", value: next), HTTPHeader(name: "X-Total", value: String(count))])
        }
        let (run, outcome) = try runDetected(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<count))
        XCTAssertEqual(transport.requests.map { query($0.url, "page") ?? 1 }.sorted(), [1, 2, 3])
    }

    func testAStripeListIsWalkedByTheLastItemsIdWhileHasMore() throws {
        let count = 25, size = 10
        let transport = ScriptedTransport()
        transport.on(base) { request, _ in
            let start = query(request.url, "starting_after").map { $0 + 1 } ?? 0
            let end = min(start + size, count)
            return .json(#"{"object":"list","has_more":\#(end < count),"data":\#(itemsJSON(start..<end))}"#)
        }
        let (run, outcome) = try runDetected(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<count))
        XCTAssertEqual(transport.requests.map(\.url), [base, "\(base)?starting_after=9", "\(base)?starting_after=19"])
    }

    func testASlackCursorIsSentBackUntilItIsEmpty() throws {
        let transport = ScriptedTransport()
        transport.on(base) { request, _ in
            switch URLText.queryValue(request.url, "cursor") {
            case nil: return .json(#"{"ok":true,"members":\#(itemsJSON(0..<3)),"response_metadata":{"next_cursor":"b2Zmc2V0OjM="}}"#)
            case "b2Zmc2V0OjM=": return .json(#"{"ok":true,"members":\#(itemsJSON(3..<5)),"response_metadata":{"next_cursor":""}}"#)
            default: return .status(400)
            }
        }
        let (run, outcome) = try runDetected(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<5))
    }

    func testLimitOffsetWithACountGoesOutInParallelSteppedByTheServedSize() throws {
        let count = 73
        let transport = ScriptedTransport(delayMilliseconds: 5)
        transport.on(base) { request, _ in
            let offset = query(request.url, "offset") ?? 0
            let limit = min(query(request.url, "limit") ?? 10, 10) // asked for 25, served 10
            let end = min(offset + limit, count)
            let next = end < count ? #""\#(base)?limit=25&offset=\#(end)""# : "null"
            return .json(#"{"count":\#(count),"next":\#(next),"results":\#(itemsJSON(offset..<end))}"#)
        }
        let (run, outcome) = try runDetected(transport, path: "/v1/things?limit=25")
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<count))
        XCTAssertEqual(transport.requests.count, 8)
        XCTAssertEqual(transport.maxOutstanding, 4)
    }

    func testPageNumbersWithoutACountAreFetchedSpeculatively() throws {
        let count = 57, size = 10
        let transport = ScriptedTransport(delayMilliseconds: 5)
        transport.on(base) { request, _ in
            let page = query(request.url, "page") ?? 1
            let start = min((page - 1) * size, count)
            let end = min(start + size, count)
            let next = end < count ? #""\#(base)?page=\#(page + 1)""# : "null"
            return .json(#"{"next":\#(next),"results":\#(itemsJSON(start..<end))}"#)
        }
        let (run, outcome) = try runDetected(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<count))
        XCTAssertEqual(transport.maxOutstanding, 4, "pages went out a window ahead")
        XCTAssertTrue(String(decoding: run.descriptionJSON(), as: UTF8.self).contains(#""plan":"speculative""#))
    }

    func testATotalAndAPageCountWithoutNextLinksAreAddressedByTheEchoedPage() throws {
        let count = 120, size = 50
        let transport = ScriptedTransport()
        transport.on(base) { request, _ in
            let page = query(request.url, "page") ?? 1
            let start = (page - 1) * size
            return .json(#"{"items":\#(itemsJSON(start..<min(start + size, count))),"total":\#(count),"page":\#(page),"size":\#(size),"pages":3}"#)
        }
        let (run, outcome) = try runDetected(transport)
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<count))
        XCTAssertEqual(transport.requests.count, 3)
    }

    // MARK: Never silently short

    func testAListWhoseDescriptionDoesNotFollowHasMoreEndsNotFollowedWithItsItemsKept() throws {
        let transport = ScriptedTransport()
        transport.on(base) { _, _ in .json(#"{"object":"list","has_more":true,"data":\#(itemsJSON(0..<10))}"#) }
        let (run, outcome) = try runDetected(transport) { description in
            description.signals[.items] = .body(JSONPointer("/data")!)
            description = description.pinningTheRest()
        }
        XCTAssertEqual(outcome?.error?.code, .notFollowed)
        XCTAssertEqual(outcome?.error?.signal, "\"has_more\": true")
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<10), "the items delivered stay delivered")
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testALinkHeaderNextIsNotIgnoredWhenTheDescriptionReadsTheBody() throws {
        let transport = ScriptedTransport()
        transport.on(base) { _, _ in
            .json(#"{"items":\#(itemsJSON(0..<5)),"next_page":null}"#,
                  headers: [HTTPHeader(name: "Link", value: #"<\#(base)?page=2>; rel="next""#)])
        }
        let (_, outcome) = try runDetected(transport) { description in
            description.signals[.items] = .body(JSONPointer("/items")!)
            description.signals[.next] = .body(JSONPointer("/next_page")!)
            description = description.pinningTheRest()
        }
        XCTAssertEqual(outcome?.error?.code, .notFollowed)
        XCTAssertEqual(outcome?.error?.hint, "--next link:next")
    }

    func testSinglePagingIsNeverChecked() throws {
        let transport = ScriptedTransport()
        transport.on(base) { _, _ in .json(#"{"data":\#(itemsJSON(0..<3)),"has_more":true}"#) }
        let (run, outcome) = try runDetected(transport) { $0.paging = .single }
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<3))
    }

    func testHasMoreWithoutAnyWayToTheNextPageIsABadPage() throws {
        let transport = ScriptedTransport()
        transport.on(base) { _, _ in .json(#"{"records":[{"name":"a"}],"has_more":true}"#) }
        let (_, outcome) = try runDetected(transport)
        XCTAssertEqual(outcome?.error?.code, .undetected)
    }

    func testAPresetPinsTheShapeAndItsSizeParameterIsOnlyNamed() throws {
        let transport = ScriptedTransport()
        transport.on(base) { request, _ in
            let start = query(request.url, "starting_after").map { $0 + 1 } ?? 0
            let end = min(start + 2, 3)
            return .json(#"{"has_more":\#(end < 3),"data":\#(itemsJSON(start..<end))}"#)
        }
        let (run, outcome) = try runDetected(transport) { $0 = try! Preset.named("stripe").applied(to: $0) }
        XCTAssertEqual(outcome, .complete)
        XCTAssertEqual(itemIDs(run.prefixJSON()), [0, 1, 2])
        XCTAssertEqual(transport.requests.first?.url, base, "limit is not sent unless asked for")
        XCTAssertThrowsError(try Preset.named("nope")) { XCTAssertEqual(($0 as? SheafError)?.code, .invalidArgument) }
    }
}
