import XCTest
@testable import Sheaf

/// A bare array of `count` objects `{"id": n}` from `first`.
private func bareArray(_ count: Int, from first: Int = 0) -> String {
    "[" + (first..<(first + count)).map { "{\"id\":\($0)}" }.joined(separator: ",") + "]"
}

/// A list that ends after page one without anything confirming it is reported as such
/// (`ListRun.endUnconfirmed`, `SHEAF_STOP_UNCONFIRMED`), never as a plain end (issue 47).
final class UnconfirmedEndTests: XCTestCase {
    /// Runs `path` against a server that pages a 50-item bare array by `?page` from 1 (20 a page
    /// unless `per_page` says otherwise) and never says there is more.
    private func run(_ path: String, paging: Paging = .detect) throws -> ListRun {
        let transport = ScriptedTransport()
        transport.otherwise { request, _ in
            let query = Dictionary(URLText.queryPairs(request.url), uniquingKeysWith: { first, _ in first })
            let size = query["per_page"].flatMap { Int($0) } ?? 20
            let page = query["page"].flatMap { Int($0) } ?? 1
            let first = (page - 1) * size
            return .json(bareArray(max(0, min(size, 50 - first)), from: first))
        }
        let client = try scriptedClient(transport)
        var description = ListDescription(path: path)
        description.paging = paging
        let run = try client.makeList(description)
        try run.start()
        XCTAssertEqual(outcome(of: run), .complete)
        return run
    }

    func testAFullBarePageThatSaysNothingEndsUnconfirmedWithItsItems() throws {
        let run = try run("/v1/things")
        XCTAssertEqual(itemIDs(run.prefixJSON()), Array(0..<20))
        XCTAssertTrue(run.endUnconfirmed, "20 items and nothing said of more: the end is not confirmed")
    }

    func testAPageAsFullAsItsPageSizeAskedEndsUnconfirmed() throws {
        XCTAssertTrue(try run("/v1/things?per_page=30").endUnconfirmed)
        XCTAssertFalse(try run("/v1/things?per_page=60").endUnconfirmed, "50 of 60 asked: the page is not full, the end is real")
    }

    func testAShortPageOrADescribedListIsAPlainEnd() throws {
        XCTAssertFalse(try run("/v1/things?per_page=7&page=8").endUnconfirmed, "one item on a page of 7: no page size's worth")
        XCTAssertFalse(try run("/v1/things", paging: .single).endUnconfirmed, "the caller said the list is one response")
        let described = try run("/v1/things?page=1", paging: .pageNumber(.init(parameter: "page", first: 1)))
        XCTAssertEqual(itemIDs(described.prefixJSON()), Array(0..<50), "described, it is read whole")
        XCTAssertFalse(described.endUnconfirmed)
    }
}
