import XCTest
@testable import Sheaf

private let pageURL = "https://api.example.com/v1/things?page=1&per_page=2"

private func anchorReader(identity: String? = nil) -> PageReader {
    var description = ListDescription(path: "/v1/things")
    description.signals[.items] = .body(JSONPointer("/items")!)
    description.signals[.next] = .body(JSONPointer("/next_page")!)
    description.signals[.total] = .body(JSONPointer("/total")!)
    description.signals[.identity] = identity.flatMap { JSONPointer($0) }.map { .item($0) } ?? SignalSource.none
    return PageReader(description.pinningTheRest())
}

private func drfReader() -> PageReader {
    var description = ListDescription(path: "/v1/things")
    description.signals[.items] = .body(JSONPointer("/results")!)
    description.signals[.next] = .body(JSONPointer("/next")!)
    description.signals[.total] = .body(JSONPointer("/count")!)
    return PageReader(description.pinningTheRest())
}

private func bareArrayReader(identity: String? = nil) -> PageReader {
    var description = ListDescription(path: "/v1/things")
    description.signals[.identity] = identity.flatMap { JSONPointer($0) }.map { .item($0) } ?? SignalSource.none
    return PageReader(description.pinningTheRest())
}

private func read(_ reader: PageReader, _ body: String, from url: String = pageURL) throws(SheafError) -> Page {
    try reader.read(Array(body.utf8), from: url)
}

/// The texts of the page's items.
private func itemTexts(_ page: Page) -> [String] {
    page.items.map { String(decoding: page.body[$0], as: UTF8.self) }
}

final class PageReaderTests: XCTestCase {
    // MARK: Shapes

    func testReadsTheAnchorShape() throws {
        let page = try read(anchorReader(), #"""
            {"items":[{"id":0,"name":"item-0"},{"id":1,"name":"item-1"}],
             "next_page":"https://api.example.com/v1/things?page=2&per_page=2","total":5}
            """#)
        XCTAssertEqual(itemTexts(page), [#"{"id":0,"name":"item-0"}"#, #"{"id":1,"name":"item-1"}"#])
        XCTAssertEqual(page.next, "https://api.example.com/v1/things?page=2&per_page=2")
        XCTAssertEqual(page.total, 5)
        XCTAssertEqual(page.identities, [], "no identity pointer, no identities")
    }

    func testReadsTheDRFShape() throws {
        let page = try read(drfReader(), #"""
            {"count":3,"next":"https://api.example.com/v1/things?page=2","previous":null,"results":[{"id":0},{"id":1}]}
            """#)
        XCTAssertEqual(itemTexts(page), [#"{"id":0}"#, #"{"id":1}"#])
        XCTAssertEqual(page.next, "https://api.example.com/v1/things?page=2")
        XCTAssertEqual(page.total, 3)
    }

    func testReadsABareArray() throws {
        let page = try read(bareArrayReader(), #" [ {"id":0} , 17, "s" ] "#)
        XCTAssertEqual(itemTexts(page), [#"{"id":0}"#, "17", #""s""#])
        XCTAssertNil(page.next)
        XCTAssertNil(page.total)
    }

    func testAnEmptyItemsArrayIsAnEmptyPage() throws {
        let page = try read(anchorReader(), #"{"items":[],"next_page":null,"total":0}"#)
        XCTAssertEqual(page.items, [])
        XCTAssertEqual(page.total, 0)
    }

    // MARK: Next links

    func testResolvesRelativeNextLinksAgainstThePageURL() throws {
        let cases = [
            ("?page=2&per_page=2", "https://api.example.com/v1/things?page=2&per_page=2"),
            ("/v2/other?cursor=abc", "https://api.example.com/v2/other?cursor=abc"),
            ("more?page=2", "https://api.example.com/v1/more?page=2"),
            ("//cdn.example.com/x?page=2", "https://cdn.example.com/x?page=2"),
        ]
        for (link, resolved) in cases {
            let page = try read(anchorReader(), #"{"items":[],"next_page":"\#(link)","total":0}"#)
            XCTAssertEqual(page.next, resolved, link)
        }
    }

    func testAnEscapedNextLinkIsDecodedBeforeItIsResolved() throws {
        let page = try read(anchorReader(), #"{"items":[],"next_page":"\/v1\/things?page=2\u0026per_page=2"}"#)
        XCTAssertEqual(page.next, "https://api.example.com/v1/things?page=2&per_page=2")
    }

    func testANullAbsentOrEmptyNextLinkMeansNoNextPage() throws {
        for body in [#"{"items":[],"next_page":null}"#, #"{"items":[]}"#, #"{"items":[],"next_page":""}"#] {
            XCTAssertNil(try read(anchorReader(), body).next, body)
        }
    }

    func testANextLinkThatIsNotAStringOrNotAnHTTPURLIsABadPage() {
        for body in [#"{"items":[],"next_page":2}"#, #"{"items":[],"next_page":{"href":"x"}}"#,
                     #"{"items":[],"next_page":"ftp://example.com/x"}"#, #"{"items":[],"next_page":"mailto:a@b.c"}"#] {
            assertBadPage(try read(anchorReader(), body), mentioning: "next_page", body)
        }
    }

    // MARK: Totals

    func testAbsentTotalIsUnknown() throws {
        XCTAssertNil(try read(anchorReader(), #"{"items":[1]}"#).total)
    }

    func testATotalThatIsNotANonNegativeIntegerIsABadPageNamingTheURL() {
        for total in ["-1", "2.5", "1e3", #""10""#, "true", "[3]", "99999999999999999999999"] {
            assertBadPage(try read(anchorReader(), #"{"items":[],"total":\#(total)}"#), mentioning: "total", total)
        }
    }

    // MARK: Bad pages

    func testMissingItemsAreABadPage() {
        assertBadPage(try read(anchorReader(), #"{"results":[],"total":0}"#), mentioning: "/items")
    }

    func testItemsThatAreNotAnArrayAreABadPage() {
        for items in ["{}", "null", #""[]""#, "3"] {
            assertBadPage(try read(anchorReader(), #"{"items":\#(items)}"#), mentioning: "not an array", items)
        }
        assertBadPage(try read(bareArrayReader(), #"{"items":[]}"#), mentioning: "not an array")
    }

    func testABodyThatIsNotJSONIsABadPageNamingTheURL() {
        for body in ["this is not json", "", "<html></html>", #"{"items":[1,2}"#, #"{"items":[]} trailing"#] {
            assertBadPage(try read(anchorReader(), body), mentioning: "not valid JSON", body)
        }
    }

    // MARK: Identities

    func testNumberIdentitiesCompareByTheirText() throws {
        let page = try read(anchorReader(identity: "/id"), #"{"items":[{"id":1},{"id":1},{"id":1.0},{"id":10}]}"#)
        XCTAssertEqual(page.identities.count, 4)
        XCTAssertEqual(page.identities[0], page.identities[1])
        XCTAssertNotEqual(page.identities[0], page.identities[2], "1 and 1.0 are different texts")
        XCTAssertNotEqual(page.identities[0], page.identities[3])
    }

    func testStringIdentitiesCompareByTheirDecodedText() throws {
        let page = try read(anchorReader(identity: "/id"),
                            #"{"items":[{"id":"a"},{"id":"\u0061"},{"id":"b"},{"id":"caf\u00e9"},{"id":"café"}]}"#)
        XCTAssertEqual(page.identities[0], page.identities[1])
        XCTAssertNotEqual(page.identities[0], page.identities[2])
        XCTAssertEqual(page.identities[3], page.identities[4])
    }

    func testAStringIdentityDiffersFromTheNumberWithTheSameDigits() throws {
        let page = try read(anchorReader(identity: "/id"), #"{"items":[{"id":"1"},{"id":1}]}"#)
        XCTAssertNotEqual(page.identities[0], page.identities[1])
    }

    func testLoneSurrogatesAndTheReplacementCharacterAreDifferentIdentities() throws {
        // They all decoded to U+FFFD, and three different items collapsed into one.
        let page = try read(bareArrayReader(identity: "/id"),
                            #"[{"id":"\ud800"},{"id":"\udbff"},{"id":"\ufffd"},{"id":"\uD800"},{"id":"\u0061"},{"id":"a"}]"#)
        XCTAssertEqual(Set(page.identities[0..<3]).count, 3)
        XCTAssertEqual(page.identities[0], page.identities[3], "the same code unit, whatever the case of its hex")
        XCTAssertEqual(page.identities[4], page.identities[5])
    }

    func testAnItemWithoutTheIdentityHasNone() throws {
        let page = try read(bareArrayReader(identity: "/meta/id"),
                            #"[{"meta":{"id":7}},{"other":1},5,{"meta":{"id":{"k":[1]}}}]"#)
        XCTAssertEqual(page.identities.count, 4)
        XCTAssertNotNil(page.identities[0])
        XCTAssertNil(page.identities[1])
        XCTAssertNil(page.identities[2])
        XCTAssertEqual(page.identities[3], IdentityKey(bytes: Array(#"{"k":[1]}"#.utf8)))
    }

    // MARK: Signals from headers, Link, cursors and flags

    private func reader(_ paging: Paging, _ signals: [Signal: SignalSource]) -> PageReader {
        var description = ListDescription(path: "/v1/things")
        description.paging = paging
        description.signals = signals
        return PageReader(description.pinningTheRest())
    }

    private func headers(_ pairs: (String, String)...) -> [HTTPHeader] {
        pairs.map { HTTPHeader(name: $0.0, value: $0.1) }
    }

    func testTotalsAndPageCountsComeFromHeadersIncludingContentRange() throws {
        let items = JSONPointer("")!
        let plain = reader(.next, [.items: .body(items), .total: .header("x-total-count"), .pageCount: .header("X-Total-Pages")])
        var page = try plain.read(Array("[1,2]".utf8), headers: headers(("X-Total-Count", " 57 "), ("X-Total-Pages", "29")), from: pageURL)
        XCTAssertEqual(page.total, 57)
        XCTAssertEqual(page.pageCount, 29)
        let range = reader(.next, [.items: .body(items), .total: .header("Content-Range")])
        page = try range.read(Array("[1,2]".utf8), headers: headers(("Content-Range", "items 0-1/573")), from: pageURL)
        XCTAssertEqual(page.total, 573)
        page = try range.read(Array("[1,2]".utf8), headers: headers(("Content-Range", "0-1/*")), from: pageURL)
        XCTAssertNil(page.total, "an unknown length is no total")
        assertBadPage(try plain.read(Array("[]".utf8), headers: headers(("X-Total-Count", "99999999999999999999")), from: pageURL),
                      mentioning: "x-total-count", "a header total past Int's range")
        assertBadPage(try plain.read(Array("[]".utf8), headers: headers(("X-Total-Count", "-3")), from: pageURL),
                      mentioning: "x-total-count")
    }

    func testTheNextPageComesFromTheLinkHeaderOrAPageNumberHeader() throws {
        let link = reader(.pageNumber(.init(parameter: "page", first: 1)), [.items: .body(JSONPointer("")!), .next: .link("next"),
                                                                               .pageCount: .link("last")])
        let page = try link.read(Array("[1]".utf8), headers: headers(("Link", #"</v1/things?page=2&per_page=2>; rel="next", </v1/things?page=7&per_page=2>; rel="last""#)),
                                 from: pageURL)
        XCTAssertEqual(page.next, "https://api.example.com/v1/things?page=2&per_page=2")
        XCTAssertEqual(page.lastPosition, 7)
        XCTAssertEqual(page.more, true)
        let gitlab = reader(.pageNumber(.init(parameter: "page", first: 1)), [.items: .body(JSONPointer("")!), .next: .header("X-Next-Page")])
        XCTAssertEqual(try gitlab.read(Array("[1]".utf8), headers: headers(("X-Next-Page", "2")), from: pageURL).next,
                       "https://api.example.com/v1/things?page=2&per_page=2")
        let last = try gitlab.read(Array("[1]".utf8), headers: headers(("X-Next-Page", "")), from: pageURL)
        XCTAssertNil(last.next)
        XCTAssertEqual(last.more, false, "an empty X-Next-Page is the end")
    }

    func testACursorIsSentBackInTheCursorParameterAndAnEmptyOneEndsTheList() throws {
        let slack = reader(.cursor(parameter: "cursor", size: nil), [.items: .body(JSONPointer("/members")!),
                                                                     .cursor: .body(JSONPointer("/response_metadata/next_cursor")!)])
        var page = try read(slack, #"{"members":[1],"response_metadata":{"next_cursor":"dXNlcjo+"}}"#)
        XCTAssertEqual(page.next, "https://api.example.com/v1/things?page=1&per_page=2&cursor=dXNlcjo%2B")
        page = try read(slack, #"{"members":[1],"response_metadata":{"next_cursor":""}}"#)
        XCTAssertNil(page.next)
        XCTAssertEqual(page.more, false)
        let stripe = reader(.cursor(parameter: "starting_after", size: nil),
                            [.items: .body(JSONPointer("/data")!), .cursor: .lastItem(JSONPointer("/id")!), .hasMore: .body(JSONPointer("/has_more")!)])
        page = try read(stripe, #"{"has_more":true,"data":[{"id":"a"},{"id":"it_2"}]}"#)
        XCTAssertEqual(page.next, "https://api.example.com/v1/things?page=1&per_page=2&starting_after=it_2")
        page = try read(stripe, #"{"has_more":false,"data":[{"id":"a"}]}"#)
        XCTAssertNil(page.next, "has_more false ends the list whatever the last id")
        XCTAssertEqual(page.more, false)
        assertBadPage(try read(stripe, #"{"has_more":"yes","data":[]}"#), mentioning: "not a boolean")
    }

    func testIsLastEndsTheListAndFalseSaysThereIsMore() throws {
        let jira = reader(.offset(.init(parameter: "startAt", first: 0)), [.items: .body(JSONPointer("/values")!), .isLast: .body(JSONPointer("/isLast")!)])
        XCTAssertEqual(try read(jira, #"{"isLast":false,"values":[1]}"#).more, true)
        XCTAssertEqual(try read(jira, #"{"isLast":true,"values":[1]}"#).more, false)
        XCTAssertNil(try read(jira, #"{"values":[1]}"#).more)
    }

    // MARK: Helpers

    private func assertBadPage(_ expression: @autoclosure () throws(SheafError) -> Page, mentioning words: String,
                               _ context: String = "", file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try expression()
            XCTFail("expected a bad page: \(context)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.code, .badPage, context, file: file, line: line)
            XCTAssertEqual(error.url, pageURL, context, file: file, line: line)
            XCTAssertTrue(error.message.contains(pageURL), "the message names the URL: \(error.message)", file: file, line: line)
            XCTAssertTrue(error.message.contains(words), "\(error.message) should mention \(words)", file: file, line: line)
        }
    }
}
