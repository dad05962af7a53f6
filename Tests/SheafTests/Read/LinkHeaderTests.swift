import XCTest
@testable import Sheaf

private let base = "https://api.example.com/v1/things?page=1"

private func link(_ values: String..., relation: String) -> String? {
    LinkHeader(values.map { HTTPHeader(name: "Link", value: $0) }).target(relation, resolvedAgainst: base)
}

final class LinkHeaderTests: XCTestCase {
    func testGitHubsLinkHeaderGivesTheNextAndTheLastPage() {
        let value = #"<https://api.example.com/v1/things?page=2>; rel="next", <https://api.example.com/v1/things?page=5>; rel="last""#
        XCTAssertEqual(link(value, relation: "next"), "https://api.example.com/v1/things?page=2")
        XCTAssertEqual(link(value, relation: "last"), "https://api.example.com/v1/things?page=5")
        XCTAssertNil(link(value, relation: "prev"))
    }

    func testCommasAndSemicolonsInsideTheTargetDoNotSplitIt() {
        let value = #"<https://api.example.com/v1/things?q=a,b;c&page=2>; rel="next", <https://api.example.com/x?page=9>; rel="last""#
        XCTAssertEqual(link(value, relation: "next"), "https://api.example.com/v1/things?q=a,b;c&page=2")
        XCTAssertEqual(link(value, relation: "last"), "https://api.example.com/x?page=9")
    }

    func testRelMayComeAfterAQuotedParameterHoldingCommasAndSemicolons() {
        let value = #"<https://api.example.com/a>; title="one, two; three"; rel="prev", <https://api.example.com/b>; title="x,y"; rel="next""#
        XCTAssertEqual(link(value, relation: "next"), "https://api.example.com/b")
        XCTAssertEqual(link(value, relation: "prev"), "https://api.example.com/a")
    }

    func testAnUnquotedRelAndAnyCaseAreRead() {
        XCTAssertEqual(link("<https://api.example.com/b>; rel=next", relation: "next"), "https://api.example.com/b")
        XCTAssertEqual(link("<https://api.example.com/b> ; REL = \"Next\"", relation: "next"), "https://api.example.com/b")
    }

    func testSeveralRelationTypesInOneRelEachCount() {
        let value = #"<https://api.example.com/b>; rel="next nofollow""#
        XCTAssertEqual(link(value, relation: "next"), "https://api.example.com/b")
        XCTAssertEqual(link(value, relation: "nofollow"), "https://api.example.com/b")
    }

    func testSeveralLinkHeadersReadAsOneList() {
        XCTAssertEqual(link("<https://api.example.com/a>; rel=\"prev\"", "<https://api.example.com/b>; rel=\"next\"", relation: "next"),
                       "https://api.example.com/b")
    }

    func testARelativeTargetIsResolvedAgainstTheResponsesURL() {
        XCTAssertEqual(link("</v1/things?page=2>; rel=\"next\"", relation: "next"), "https://api.example.com/v1/things?page=2")
        XCTAssertEqual(link("<?page=3>; rel=\"next\"", relation: "next"), "https://api.example.com/v1/things?page=3")
    }

    func testTheFirstRelParameterOfALinkCounts() {
        XCTAssertNil(link(#"<https://api.example.com/b>; rel="prev"; rel="next""#, relation: "next"))
    }

    func testGarbageIsSkippedAndAnUnterminatedTargetEndsTheHeader() {
        XCTAssertEqual(link(#"garbage; rel="next", <https://api.example.com/b>; rel="next""#, relation: "next"),
                       "https://api.example.com/b")
        XCTAssertNil(link("<https://api.example.com/b; rel=\"next\"", relation: "next"))
        XCTAssertNil(link("", relation: "next"))
        XCTAssertNil(link(#"<https://api.example.com/b>; rel="next"#, relation: "nex"))
    }

    func testATargetThatIsNotAnHTTPURLIsNotFollowed() {
        XCTAssertNil(link(#"<mailto:a@example.com>; rel="next""#, relation: "next"))
    }
}
