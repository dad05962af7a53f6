import XCTest
@testable import Sheaf

private let token = "s3cr3t/T0K+EN"

final class RedactorTests: XCTestCase {
    private let redactor = Redactor([token])

    func testEverySpellingOfTheSecretIsRemoved() {
        for spelling in [token, "s3cr3t%2FT0K%2BEN", "s3cr3t%2fT0K%2bEN", #"s3cr3t\/T0K\u002BEN"#, #"s3cr3t\u002fT0K+EN"#] {
            XCTAssertEqual(redactor.redact("before \(spelling) after"), "before <redacted> after", spelling)
        }
    }

    func testASecretFollowedByACombiningMarkIsStillFound() {
        // String.replacing compares grapheme clusters: "N" + U+0301 is not "N".
        XCTAssertEqual(redactor.redact("x \(token)\u{301} y"), "x <redacted>\u{301} y")
    }

    func testSomethingMerelyLikeTheSecretIsKept() {
        XCTAssertEqual(redactor.redact("s3cr3t/T0K EN s3cr3t%2"), "s3cr3t/T0K EN s3cr3t%2")
        XCTAssertEqual(Redactor([]).redact(token), token)
    }

    func testTheBodyExcerptIsRedactedBeforeItIsCutSoNoPrefixSurvives() {
        // The token straddles the 1 KiB cut.
        let padding = String(repeating: "x", count: HTTPFailure.excerptLimit - 4)
        let body = #"{"error":"\#(padding)\#(token) and more"}"#
        let error = HTTPFailure.error(for: HTTPResponse(status: 401, body: Array(body.utf8)), url: "https://a.example/x",
                                      attempts: 1, redactor: redactor)
        XCTAssertFalse(error.bodyExcerpt!.contains("s3cr"), String(error.bodyExcerpt!.suffix(20)))
        XCTAssertFalse(error.message.contains("s3cr"))
        XCTAssertFalse(error.serverMessage!.contains("s3cr"))
    }

    func testATokenInANextLinkIsRedactedFromABadPageError() throws {
        // The next link carries the token (a server echoing it into a URL); the page behind it is
        // not JSON. The reader's error was built outside the one place that redacted.
        let transport = ScriptedTransport()
        transport.on(scriptedList) { request, _ in
            request.url.contains("leak") ? .json("not json") : .json(#"{"items":[{"id":1}],"next_page":"\#(scriptedList)?leak=\#(scriptedToken)"}"#)
        }
        let outcome = try scriptedClient(transport).fetchAll(linkedList()).outcome
        let error = try XCTUnwrap(outcome.error)
        XCTAssertEqual(error.code, .badPage)
        XCTAssertFalse(error.message.contains(scriptedToken), error.message)
        XCTAssertFalse(error.url?.contains(scriptedToken) ?? false)
    }
}
