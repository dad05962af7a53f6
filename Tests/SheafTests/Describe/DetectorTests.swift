import XCTest
@testable import Sheaf

private let api = "https://api.example.com/v1/things"

private func response(_ body: String, _ headers: [(String, String)] = []) -> HTTPResponse {
    HTTPResponse(status: 200, headers: headers.map { HTTPHeader(name: $0.0, value: $0.1) }, body: Array(body.utf8))
}

private func items(_ range: Range<Int>, key: String = "id") -> String {
    "[" + range.map { #"{"\#(key)":\#($0)}"# }.joined(separator: ",") + "]"
}

private func resolve(_ body: String, _ headers: [(String, String)] = [], url: String = api,
                     _ description: ListDescription = ListDescription(path: "/v1/things")) throws -> Detector.Resolution {
    try Detector.resolve(description, response(body, headers), url: url)
}

private func body(_ pointer: String) -> SignalSource { .body(JSONPointer(pointer)!) }

final class DetectorTests: XCTestCase {
    // MARK: Conventions, detected from their first page

    func testGitHubABareArrayWithALinkHeaderIsAddressedByPageNumber() throws {
        let link = #"<\#(api)?per_page=30&page=2>; rel="next", <\#(api)?per_page=30&page=34>; rel="last""#
        let resolution = try resolve(items(0..<30), [("Link", link)], url: "\(api)?per_page=30")
        let description = resolution.description
        XCTAssertEqual(description.source(of: .items), body(""))
        XCTAssertEqual(description.source(of: .next), .link("next"))
        XCTAssertEqual(description.source(of: .pageCount), .link("last"))
        XCTAssertEqual(description.source(of: .total), SignalSource.none)
        XCTAssertEqual(description.paging, .pageNumber(.init(parameter: "page", first: 1)))
        XCTAssertTrue(resolution.pagingDetected)
        XCTAssertEqual(resolution.detected, [.items, .next, .pageCount])
    }

    func testAnItemsKeyStartingWithACombiningMarkIsDetectedNotATrap() throws {
        // Found by fuzz_detection: "/" + U+064B was one Character, so the pointer built for the
        // key was refused and force-unwrapped.
        let key = "\u{64B}\u{5CF}age=]2"
        let resolution = try resolve("{\"\(key)\":[{\"id\":1}]}")
        XCTAssertEqual(resolution.description.source(of: .items), body("/" + key))
    }

    func testDjangoRESTFrameworkPagesAreAddressedByPageNumberWithTheirCount() throws {
        let description = try resolve(#"{"count":95,"next":"\#(api)?page=2","previous":null,"results":\#(items(0..<10))}"#).description
        XCTAssertEqual(description.source(of: .items), body("/results"))
        XCTAssertEqual(description.source(of: .next), body("/next"))
        XCTAssertEqual(description.source(of: .total), body("/count"))
        XCTAssertEqual(description.paging, .pageNumber(.init(parameter: "page", first: 1)))
    }

    func testLimitOffsetNextLinksStepByTheServedPageSize() throws {
        let next = "\(api)?limit=10&offset=10"
        let description = try resolve(#"{"count":95,"next":"\#(next)","results":\#(items(0..<10))}"#, url: "\(api)?limit=10").description
        XCTAssertEqual(description.paging, .offset(.init(parameter: "offset", first: 0)))
    }

    func testODataSkipLinksAreOffsets() throws {
        let next = "\(api)?%24skip=50"
        let description = try resolve(#"{"@odata.count":120,"value":\#(items(0..<50)),"@odata.nextLink":"\#(next)"}"#).description
        XCTAssertEqual(description.source(of: .items), body("/value"))
        XCTAssertEqual(description.source(of: .next), body("/@odata.nextLink"))
        XCTAssertEqual(description.source(of: .total), body("/@odata.count"))
        XCTAssertEqual(description.paging, .offset(.init(parameter: "$skip", first: 0)))
    }

    func testStripeSendsTheLastItemsIdBackWhileHasMore() throws {
        let description = try resolve(#"{"object":"list","has_more":true,"data":[{"id":"it_1"},{"id":"it_2"}]}"#).description
        XCTAssertEqual(description.source(of: .items), body("/data"))
        XCTAssertEqual(description.source(of: .hasMore), body("/has_more"))
        XCTAssertEqual(description.source(of: .cursor), .lastItem(JSONPointer("/id")!))
        XCTAssertEqual(description.paging, .cursor(parameter: "starting_after", size: nil))
    }

    func testSlackAndGoogleCursorsAreSentBackInTheirOwnParameters() throws {
        let slack = try resolve(#"{"ok":true,"members":\#(items(0..<2)),"response_metadata":{"next_cursor":"dXNlcjo="}}"#).description
        XCTAssertEqual(slack.source(of: .items), body("/members"))
        XCTAssertEqual(slack.source(of: .cursor), body("/response_metadata/next_cursor"))
        XCTAssertEqual(slack.paging, .cursor(parameter: "cursor", size: nil))
        let google = try resolve(#"{"kind":"drive#fileList","files":\#(items(0..<2)),"nextPageToken":"abc"}"#).description
        XCTAssertEqual(google.source(of: .items), body("/files"))
        XCTAssertEqual(google.paging, .cursor(parameter: "pageToken", size: nil))
    }

    func testHALFindsTheArrayUnderEmbeddedAndAZeroBasedPage() throws {
        let text = #"{"_embedded":{"things":\#(items(0..<20))},"_links":{"next":{"href":"\#(api)?page=1&size=20"}},"page":{"size":20,"totalElements":45,"totalPages":3,"number":0}}"#
        let description = try resolve(text, url: "\(api)?size=20").description
        XCTAssertEqual(description.source(of: .items), body("/_embedded/things"))
        XCTAssertEqual(description.source(of: .next), body("/_links/next/href"))
        XCTAssertEqual(description.source(of: .total), body("/page/totalElements"))
        XCTAssertEqual(description.source(of: .pageCount), body("/page/totalPages"))
        XCTAssertEqual(description.paging, .pageNumber(.init(parameter: "page", first: 0)))
    }

    func testHeaderTotalsAndTheXNextPageHeaderAreFound() throws {
        let jsonServer = try resolve(items(0..<10), [("X-Total-Count", "57")], url: "\(api)?_page=1").description
        XCTAssertEqual(jsonServer.source(of: .total), .header("X-Total-Count"))
        XCTAssertEqual(jsonServer.paging, .pageNumber(.init(parameter: "_page", first: 1)), "from the request's own page parameter")
        let gitlab = try resolve(items(0..<20), [("X-Next-Page", "2"), ("X-Total", "45"), ("X-Total-Pages", "3")]).description
        XCTAssertEqual(gitlab.source(of: .next), .header("X-Next-Page"))
        XCTAssertEqual(gitlab.source(of: .total), .header("X-Total"))
        XCTAssertEqual(gitlab.source(of: .pageCount), .header("X-Total-Pages"))
        let range = try resolve(items(0..<25), [("Content-Range", "items 0-24/573")], url: "\(api)?offset=0&limit=25").description
        XCTAssertEqual(range.source(of: .total), .header("Content-Range"))
        XCTAssertEqual(range.paging, .offset(.init(parameter: "offset", first: 0)))
    }

    func testAPageThatEchoesItsAddressingNamesTheParameter() throws {
        let fastapi = try resolve(#"{"items":\#(items(0..<50)),"total":120,"page":1,"size":50,"pages":3}"#).description
        XCTAssertEqual(fastapi.source(of: .total), body("/total"))
        XCTAssertEqual(fastapi.source(of: .pageCount), body("/pages"))
        XCTAssertEqual(fastapi.paging, .pageNumber(.init(parameter: "page", first: 1)))
        let jira = try resolve(#"{"startAt":0,"maxResults":50,"total":120,"isLast":false,"values":\#(items(0..<50))}"#).description
        XCTAssertEqual(jira.source(of: .isLast), body("/isLast"))
        XCTAssertEqual(jira.paging, .offset(.init(parameter: "startAt", first: 0)))
    }

    func testAnApproximateElasticsearchTotalCountsAsUnknown() throws {
        let gte = try resolve(#"{"hits":{"total":{"value":10000,"relation":"gte"},"hits":\#(items(0..<10))}}"#, url: "\(api)?from=0").description
        XCTAssertEqual(gte.source(of: .items), body("/hits/hits"))
        XCTAssertEqual(gte.source(of: .total), SignalSource.none)
        let eq = try resolve(#"{"hits":{"total":{"value":12,"relation":"eq"},"hits":\#(items(0..<10))}}"#, url: "\(api)?from=0").description
        XCTAssertEqual(eq.source(of: .total), body("/hits/total/value"))
        XCTAssertEqual(eq.paging, .offset(.init(parameter: "from", first: 0)))
    }

    func testJSONAPIPrefersDataOverIncluded() throws {
        let text = #"{"data":\#(items(0..<2)),"included":\#(items(5..<6)),"links":{"next":"\#(api)?page%5Bnumber%5D=2"},"meta":{"total":9}}"#
        let description = try resolve(text).description
        XCTAssertEqual(description.source(of: .items), body("/data"))
        XCTAssertEqual(description.source(of: .next), body("/links/next"))
        XCTAssertEqual(description.source(of: .total), body("/meta/total"))
        XCTAssertEqual(description.paging, .pageNumber(.init(parameter: "page[number]", first: 1)))
    }

    func testAnArrayWithNothingElseIsOnePage() throws {
        let resolution = try resolve(items(0..<3))
        XCTAssertEqual(resolution.description.paging, .next)
        XCTAssertEqual(resolution.detected, [.items])
    }

    // MARK: What detection leaves alone, and where it gives up

    func testPinnedPartsAreKeptAndOnlyTheRestIsDetected() throws {
        var pinned = ListDescription(path: "/v1/things")
        pinned.signals[.items] = body("/results")
        pinned.signals[.total] = SignalSource.none
        let resolution = try resolve(#"{"count":9,"next":null,"results":[],"items":[]}"#, [], url: api, pinned)
        XCTAssertEqual(resolution.description.source(of: .items), body("/results"))
        XCTAssertEqual(resolution.description.source(of: .total), SignalSource.none)
        XCTAssertEqual(resolution.description.source(of: .next), body("/next"))
        XCTAssertFalse(resolution.detected.contains(.items))
    }

    func testSeveralCandidateArraysAreAnErrorNamingThem() {
        XCTAssertThrowsError(try resolve(#"{"users":[1],"groups":[2]}"#)) { error in
            let error = error as? SheafError
            XCTAssertEqual(error?.code, .undetected)
            XCTAssertTrue(error?.message.contains("\"/users\"") == true && error?.message.contains("\"/groups\"") == true,
                          error?.message ?? "")
            XCTAssertEqual(error?.hint, "--items /users or --items /groups")
        }
    }

    func testNoArrayAtAllIsAnErrorSuggestingSinglePaging() {
        XCTAssertThrowsError(try resolve(#"{"id":1,"name":"one"}"#)) { error in
            XCTAssertEqual((error as? SheafError)?.code, .undetected)
        }
    }

    func testATotalAboveThePageWithoutAnyWayToAddressPagesLeavesThePagingToAProbe() throws {
        // Deciding it takes requests (PagingProbe, run by the list), which a detector does not make.
        let resolution = try resolve(#"{"results":\#(items(0..<10)),"count":95}"#)
        XCTAssertTrue(resolution.needsProbe)
        XCTAssertEqual(resolution.description.paging, .detect)
        XCTAssertFalse(resolution.pagingDetected)
        XCTAssertEqual(resolution.description.source(of: .total), body("/count"))
        XCTAssertFalse(try resolve(#"{"results":\#(items(0..<10)),"count":10}"#).needsProbe, "nothing more promised")
    }

    // MARK: Inference of addressing from a next link

    func testInferenceNeedsOneIntegerParameterThatStepsByAPageOrByTheServedItems() {
        XCTAssertEqual(Detector.infer(from: "\(api)?page=3", to: "\(api)?page=4", served: 10),
                       .pageNumber(.init(parameter: "page", first: 3)))
        XCTAssertEqual(Detector.infer(from: api, to: "\(api)?p=1", served: 10), .pageNumber(.init(parameter: "p", first: 0)))
        XCTAssertEqual(Detector.infer(from: "\(api)?offset=20&limit=10", to: "\(api)?offset=30&limit=10", served: 10),
                       .offset(.init(parameter: "offset", first: 20)))
        XCTAssertNil(Detector.infer(from: api, to: "\(api)?cursor=abc", served: 10), "a cursor is not addressable")
        XCTAssertNil(Detector.infer(from: "\(api)?page=1", to: "\(api)?page=5", served: 10), "not one page on")
        XCTAssertNil(Detector.infer(from: "\(api)?page=1", to: "https://api.example.com/v2/things?page=2", served: 10))
        XCTAssertNil(Detector.infer(from: "\(api)?page=1&sort=a", to: "\(api)?page=2", served: 10), "a parameter vanished")
    }

    func testGitHubsAddedPerPageDoesNotMakeThePageAmbiguous() {
        // per_page=30 would fit an offset step of 30 served items; "page" is the page-number name.
        XCTAssertEqual(Detector.infer(from: api, to: "\(api)?per_page=30&page=2", served: 30),
                       .pageNumber(.init(parameter: "page", first: 1)))
    }

    // MARK: Never silently short

    private func lastPage(_ text: String, _ headers: [(String, String)] = []) -> Page {
        var page = Page(body: Array(text.utf8), items: [], identities: [])
        page.headers = headers.map { HTTPHeader(name: $0.0, value: $0.1) }
        page.url = api
        return page
    }

    func testSignalsOfMoreThatTheDescriptionDoesNotReadAreReported() {
        var described = ListDescription(path: "/v1/things")
        described.signals[.items] = body("/data")
        described = described.pinningTheRest()
        let cases: [(String, [(String, String)], String)] = [
            ("[]", [("Link", #"<\#(api)?page=2>; rel="next""#)], "Link rel=\"next\""),
            (#"{"data":[],"has_more":true}"#, [], "\"has_more\": true"),
            (#"{"data":[],"next":"\#(api)?page=2"}"#, [], "a next link at \"/next\""),
            (#"{"data":[],"response_metadata":{"next_cursor":"abc"}}"#, [], "a cursor at \"/response_metadata/next_cursor\""),
            (#"{"data":[],"total":12}"#, [], "a total of 12 at \"/total\" (3 items arrived)"),
            ("[]", [("X-Total-Count", "12")], "X-Total-Count: 12 (3 items arrived)"),
            ("[]", [("X-Next-Page", "2")], "X-Next-Page: 2"),
        ]
        for (text, headers, signal) in cases {
            let error = Detector.unfollowed(lastPage(text, headers), described, itemCount: 3)
            XCTAssertEqual(error?.code, .notFollowed, text)
            XCTAssertEqual(error?.signal, signal, text)
            XCTAssertFalse(error?.hint?.isEmpty ?? true)
        }
    }

    func testALastPageThatAgreesTheListEndedIsNotReported() {
        var described = ListDescription(path: "/v1/things")
        described.signals[.items] = body("/data")
        described.signals[.next] = body("/next")
        described.signals[.hasMore] = body("/has_more")
        described = described.pinningTheRest()
        for text in [#"{"data":[],"next":null,"has_more":false,"total":3}"#, #"{"data":[],"next":"\#(api)?page=9","has_more":true}"#,
                     #"{"data":[],"response_metadata":{"next_cursor":""}}"#, #"{"data":[],"total":2}"#] {
            XCTAssertNil(Detector.unfollowed(lastPage(text), described, itemCount: 3), text)
        }
        XCTAssertNil(Detector.unfollowed(lastPage("[]", [("Link", #"<\#(api)?page=1>; rel="prev""#)]), described, itemCount: 3))
    }
}
