import XCTest
@testable import Sheaf

final class JSONPointerTests: XCTestCase {
    func testParsesTheExamplesOfRFC6901() {
        let examples: [(String, [String])] = [
            ("", []),
            ("/foo", ["foo"]),
            ("/foo/0", ["foo", "0"]),
            ("/", [""]),
            ("/a~1b", ["a/b"]),
            ("/c%d", ["c%d"]),
            ("/e^f", ["e^f"]),
            ("/g|h", ["g|h"]),
            ("/i\\j", ["i\\j"]),
            ("/k\"l", ["k\"l"]),
            ("/ ", [" "]),
            ("/m~0n", ["m~n"]),
        ]
        for (text, tokens) in examples {
            XCTAssertEqual(JSONPointer(text)?.tokens, tokens, text)
        }
    }

    func testUnescapesTildeZeroOneAsTildeOneNotAsSlash() {
        XCTAssertEqual(JSONPointer("/~01")?.tokens, ["~1"])
        XCTAssertEqual(JSONPointer("/~10")?.tokens, ["/0"])
    }

    func testKeepsEmptyTokensBetweenSlashes() {
        XCTAssertEqual(JSONPointer("//a//")?.tokens, ["", "a", "", ""])
    }

    func testRejectsTextThatIsNotAPointer() {
        for text in ["foo", "#/foo", "/~", "/~2", "/a~", "/~a", " /a"] {
            XCTAssertNil(JSONPointer(text), text)
        }
    }

    func testDescriptionEscapesTokensBackToThePointerText() {
        for text in ["", "/", "/a~1b/m~0n", "/~01", "/items/0/id", "/caf\u{e9}"] {
            XCTAssertEqual(JSONPointer(text)?.description, text)
        }
    }

    func testAKeyStartingWithACombiningMarkIsAPointerAndEscapesRoundTrip() {
        // "/" + U+064B forms one grapheme cluster: the pointer is still read by scalars.
        XCTAssertEqual(JSONPointer("/\u{64B}age")?.tokens, ["\u{64B}age"])
        for token in ["\u{64B}age", "~\u{301}x", "/\u{301}y"] {
            let pointer = JSONPointer("/" + JSONPointer.escaping(token))
            XCTAssertEqual(pointer?.tokens, [token])
            XCTAssertEqual(pointer.flatMap { JSONPointer($0.description) }, pointer)
        }
    }

    func testPointersWithTheSameTokensAreEqual() {
        XCTAssertEqual(JSONPointer("/a~1b"), JSONPointer("/a~1b"))
        XCTAssertNotEqual(JSONPointer("/a~1b"), JSONPointer("/a/b"))
    }
}
